package delta

import "sync"

// versionMemo remembers a small value per version (an in-commit
// timestamp, a history line's length), up to maxMemo of them: beyond that
// it starts over. It is safe for concurrent use; the zero value is ready.
type versionMemo[V any] struct {
	mu sync.Mutex
	m  map[int64]V
}

// maxMemo bounds a versionMemo (16 bytes and map overhead a value).
const maxMemo = 1 << 20

func (m *versionMemo[V]) get(v int64) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	x, ok := m.m[v]
	return x, ok
}

func (m *versionMemo[V]) put(v int64, x V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil || len(m.m) >= maxMemo {
		m.m = map[int64]V{}
	}
	m.m[v] = x
}
