package delta_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/deltafs/deltafs/delta"
)

func TestZ85KnownVector(t *testing.T) {
	// The example of the Z85 specification (ZeroMQ RFC 32).
	raw := []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B}
	if got := delta.Z85Encode(raw); got != "HelloWorld" {
		t.Fatalf("Z85Encode = %q, want HelloWorld", got)
	}
	got, err := delta.Z85Decode("HelloWorld")
	if err != nil || !bytes.Equal(got, raw) {
		t.Fatalf("Z85Decode(HelloWorld) = %x, %v; want %x", got, err, raw)
	}
}

func TestZ85RoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 0; n <= 41; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		if n == 7 {
			b = bytes.Repeat([]byte{0xff}, n) // largest group values
		}
		s := delta.Z85Encode(b)
		if want := (n + 3) / 4 * 5; len(s) != want {
			t.Fatalf("n=%d: encoded length %d, want %d", n, len(s), want)
		}
		got, err := delta.Z85Decode(s)
		if err != nil {
			t.Fatalf("n=%d: decode %q: %v", n, s, err)
		}
		if len(got) != (n+3)/4*4 || !bytes.Equal(got[:n], b) {
			t.Fatalf("n=%d: round trip %x -> %q -> %x", n, b, s, got)
		}
		for _, pad := range got[n:] {
			if pad != 0 {
				t.Fatalf("n=%d: padding byte %#x, want 0", n, pad)
			}
		}
	}
}

func TestZ85Decode(t *testing.T) {
	tests := []struct {
		in   string
		want []byte // nil: error
	}{
		{"%nSc0", []byte{0xff, 0xff, 0xff, 0xff}}, // 2^32-1
		{"00000", []byte{0, 0, 0, 0}},
		{"", []byte{}},
		{"Hell", nil},      // not a multiple of 5
		{"HelloWorl", nil}, // not a multiple of 5
		{"Hel o", nil},     // space is not a digit
		{"Hel\"o", nil},    // quote is not a digit
		{"Hel~o", nil},     // tilde is not a digit
		{"Hello\x00\x00\x00\x00\x00", nil},
		{"%nSc1", nil}, // 2^32: overflow by one
		{"#####", nil}, // 85^5-1 overflows
		{"####0", nil}, // four pad characters leave no byte
		// The z85 crate's padded tail: k '#' then the last 4-k bytes in 5-k digits.
		{"HelloWorld##093", []byte{0x86, 0x4F, 0xD2, 0x6F, 0xB5, 0x59, 0xF7, 0x5B, 0x03, 0x00}},
		{"#0000", []byte{0, 0, 0}},
		{"###3e", nil},          // 3*85+14 = 269 overflows one byte
		{"###30", []byte{0xff}}, // 3*85 = 255
		{"##093Hello", nil},     // padding only in the last group
		{"#%nSc", nil},          // 3 bytes overflow
		{"##0 3", nil},          // invalid digit in a padded tail
	}
	for _, tt := range tests {
		got, err := delta.Z85Decode(tt.in)
		if tt.want == nil {
			if err == nil {
				t.Errorf("Z85Decode(%q) = %x, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || !bytes.Equal(got, tt.want) {
			t.Errorf("Z85Decode(%q) = %x, %v; want %x", tt.in, got, err, tt.want)
		}
	}
}

func TestDVUUIDFromZ85(t *testing.T) {
	tests := []struct{ in, want string }{
		{"^-aqEH.-t@S}K{vb[*k^", "d2c639aa-8816-431a-aaf6-d3fe2512ff61"}, // spec example, minus prefix "ab"
		{"0X9F0q2<2yJ-f)Gm2!e0", "0229ec3d-5100-44e1-8e53-702d448da8da"}, // golden dv-partitioned-with-checkpoint
	}
	for _, tt := range tests {
		got, err := delta.DVUUIDFromZ85(tt.in)
		if err != nil || got.String() != tt.want {
			t.Errorf("DVUUIDFromZ85(%q) = %v, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "0X9F0q2<2yJ-f)Gm2!e", "0X9F0q2<2yJ-f)Gm2!e0a", "0X9F0q2<2yJ-f)Gm2 e0"} {
		if _, err := delta.DVUUIDFromZ85(bad); !errors.Is(err, delta.ErrCorruptDeletionVector) {
			t.Errorf("DVUUIDFromZ85(%q) err = %v, want ErrCorruptDeletionVector", bad, err)
		}
	}
}
