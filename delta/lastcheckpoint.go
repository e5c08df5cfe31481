package delta

// _last_checkpoint [PROTOCOL.md "Last Checkpoint File"]: reading it as a
// hint (absent, unparsable or failing its checksum: list instead) and its
// checksum over the canonical form.

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// LastCheckpoint is the _last_checkpoint hint. It may be stale, torn or
// point to an incomplete checkpoint: readers only use it to choose where
// to start listing, and validate what they find.
type LastCheckpoint struct {
	Version       int64             `json:"version"`
	Size          int64             `json:"size"`
	Parts         *int              `json:"parts,omitempty"`
	SizeInBytes   *int64            `json:"sizeInBytes,omitempty"`
	NumOfAddFiles *int64            `json:"numOfAddFiles,omitempty"`
	Checksum      string            `json:"checksum,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
}

// LastCheckpointKey is the key of the hint.
const LastCheckpointKey = LogDir + "_last_checkpoint"

// readLastCheckpoint returns the hint, or ok=false when it is absent,
// unparsable or fails its checksum (all of which mean: list instead).
func readLastCheckpoint(ctx context.Context, s Storage) (lc LastCheckpoint, ok bool, err error) {
	data, err := ReadAll(ctx, s, LastCheckpointKey)
	if errors.Is(err, ErrNotExist) {
		return lc, false, nil
	}
	if err != nil {
		return lc, false, err
	}
	if err := json.Unmarshal(data, &lc); err != nil || lc.Version < 0 {
		return lc, false, nil
	}
	if lc.Checksum != "" {
		sum, err := lastCheckpointChecksum(data)
		if err != nil || sum != lc.Checksum {
			return lc, false, nil
		}
	}
	return lc, true, nil
}

// lastCheckpointChecksum computes the protocol's canonical MD5 of a
// _last_checkpoint object, without its top-level checksum field.
func lastCheckpointChecksum(data []byte) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return "", err
	}
	delete(obj, "checksum")
	var pairs [][2]string
	flattenCanonical(obj, "", &pairs)
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	parts := make([]string, len(pairs))
	for i, p := range pairs {
		parts[i] = p[0] + "=" + p[1]
	}
	sum := md5.Sum([]byte(strings.Join(parts, ",")))
	return hex.EncodeToString(sum[:]), nil
}

func flattenCanonical(v any, path string, out *[][2]string) {
	join := func(seg string) string {
		if path == "" {
			return seg
		}
		return path + "+" + seg
	}
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			flattenCanonical(x, join(`"`+canonicalEscape(k)+`"`), out)
		}
	case []any:
		for i, x := range t {
			flattenCanonical(x, join(strconv.Itoa(i)), out)
		}
	case string:
		*out = append(*out, [2]string{path, `"` + canonicalEscape(t) + `"`})
	case nil:
		*out = append(*out, [2]string{path, "null"})
	default:
		*out = append(*out, [2]string{path, fmt.Sprint(t)})
	}
}

// canonicalEscape percent-encodes everything but A-Za-z0-9-._~, uppercase.
func canonicalEscape(s string) string {
	e := url.PathEscape(s) // leaves some sub-delims unescaped; finish by hand
	var b strings.Builder
	for i := 0; i < len(e); i++ {
		c := e[i]
		if c == '%' || isUnreserved(c) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func isUnreserved(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
