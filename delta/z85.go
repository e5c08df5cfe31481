package delta

import (
	"fmt"
	"math"
	"strings"

	"github.com/google/uuid"
)

// z85Alphabet is the ZeroMQ Z85 alphabet, which the Delta protocol calls
// "Base85" (PROTOCOL.md "Deletion Vector Descriptor Schema").
const z85Alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"

// z85Values maps a byte to its digit value, or -1 when it is not a Z85 digit.
var z85Values = func() [256]int8 {
	var v [256]int8
	for i := range v {
		v[i] = -1
	}
	for i := 0; i < len(z85Alphabet); i++ {
		v[z85Alphabet[i]] = int8(i)
	}
	return v
}()

// Z85Encode encodes b in Z85: every 4 bytes, read as a big-endian uint32,
// become 5 digits, most significant first. b is padded with zero bytes to a
// multiple of 4, as Delta writers do, so the result always has
// ceil(len(b)/4)*5 characters.
func Z85Encode(b []byte) string {
	groups := (len(b) + 3) / 4
	out := make([]byte, groups*5)
	for g := 0; g < groups; g++ {
		var word [4]byte
		copy(word[:], b[g*4:])
		v := uint32(word[0])<<24 | uint32(word[1])<<16 | uint32(word[2])<<8 | uint32(word[3])
		for i := 4; i >= 0; i-- {
			out[g*5+i] = z85Alphabet[v%85]
			v /= 85
		}
	}
	return string(out)
}

// Z85Decode decodes a Z85 string into len(s)/5*4 bytes. The length must be
// a multiple of 5; a character outside the alphabet or a group whose value
// exceeds 2^32-1 is an error. Zero padding added by Delta's encoder is kept:
// callers truncate to the length they know (sizeInBytes for inline deletion
// vectors).
//
// The last group may instead use the padded tail of the Rust z85 crate
// (used by delta-rs and delta-kernel-rs): k leading '#' characters (1 to 3,
// impossible in a plain group, whose value would overflow) followed by
// 5-k digits holding the final 4-k bytes big-endian; the result is then k
// bytes shorter. Errors are plain; DV code wraps them in
// ErrCorruptDeletionVector.
func Z85Decode(s string) ([]byte, error) {
	if len(s)%5 != 0 {
		return nil, fmt.Errorf("z85: length %d is not a multiple of 5", len(s))
	}
	out := make([]byte, 0, len(s)/5*4)
	for g := 0; g < len(s); g += 5 {
		group := s[g : g+5]
		pad := len(group) - len(strings.TrimLeft(group, "#"))
		if pad > 0 && pad < 4 && g+5 == len(s) {
			return decodeZ85Tail(out, group[pad:], g+pad)
		}
		v, err := z85Group(group, g)
		if err != nil {
			return nil, err
		}
		if v > math.MaxUint32 {
			return nil, fmt.Errorf("z85: group at %d overflows 32 bits", g)
		}
		out = append(out, byte(v>>24), byte(v>>16), byte(v>>8), byte(v))
	}
	return out, nil
}

// z85Group returns the value of the digits of group, which starts at
// offset at of the input (for messages).
func z85Group(group string, at int) (uint64, error) {
	var v uint64
	for i := 0; i < len(group); i++ {
		d := z85Values[group[i]]
		if d < 0 {
			return 0, fmt.Errorf("z85: invalid character %q at %d", group[i], at+i)
		}
		v = v*85 + uint64(d)
	}
	return v, nil
}

// decodeZ85Tail appends the len(digits)-1 bytes of a z85-crate padded tail.
func decodeZ85Tail(out []byte, digits string, at int) ([]byte, error) {
	v, err := z85Group(digits, at)
	if err != nil {
		return nil, err
	}
	n := len(digits) - 1
	if v>>(8*n) != 0 {
		return nil, fmt.Errorf("z85: padded tail at %d overflows %d bytes", at, n)
	}
	for i := n - 1; i >= 0; i-- {
		out = append(out, byte(v>>(8*i)))
	}
	return out, nil
}

// DVUUIDFromZ85 decodes the 20-character Z85 form of a deletion vector
// file's UUID (the last 20 characters of a `u` descriptor's
// pathOrInlineDv). Bytes 0-7 are the most significant half, as in Java's
// UUID. Errors wrap ErrCorruptDeletionVector.
func DVUUIDFromZ85(s string) (uuid.UUID, error) {
	if len(s) != 20 {
		return uuid.UUID{}, fmt.Errorf("%w: UUID %q: want 20 Z85 characters, got %d",
			ErrCorruptDeletionVector, s, len(s))
	}
	b, err := Z85Decode(s)
	if err != nil {
		return uuid.UUID{}, fmt.Errorf("%w: UUID %q: %v", ErrCorruptDeletionVector, s, err)
	}
	return uuid.UUID(b), nil
}
