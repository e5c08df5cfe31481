package testenv

import (
	"context"
	"runtime"
	"runtime/metrics"
	"syscall"
	"testing"
	"time"
)

// HeapPeak samples the bytes of live+unswept heap objects while a
// benchmark runs (runtime/metrics, no stop-the-world) and keeps the max.
// It also reports the process CPU time per op (user+sys, GC included),
// which is steadier than wall time on a machine shared with other jobs.
type HeapPeak struct {
	cancel context.CancelFunc
	done   chan struct{}
	max    uint64
	cpu0   time.Duration
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func StartHeapPeak() *HeapPeak {
	runtime.GC()
	ctx, cancel := context.WithCancel(context.Background())
	p := &HeapPeak{cancel: cancel, done: make(chan struct{}), cpu0: cpuTime()}
	go func() {
		defer close(p.done)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			p.max = max(p.max, s[0].Value.Uint64())
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *HeapPeak) Report(b *testing.B) {
	b.StopTimer()
	cpu := cpuTime() - p.cpu0
	p.cancel()
	<-p.done
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(p.max)/(1<<20), "peak-heap-MiB")
}

// Max is the highest heap sample so far.
func (p *HeapPeak) Max() uint64 { return p.max }

// LiveHeap is the heap's live bytes after a GC (runtime/metrics: the
// objects' bytes, not the spans holding them).
func LiveHeap() int64 {
	runtime.GC()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}
