package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzRoundTrip: for a byte-level tokenizer without a normalizer, decoding
// the encoding of any valid UTF-8 text gives the text back, and the stream
// decoder agrees with Decode.
func FuzzRoundTrip(f *testing.F) {
	tok, err := Parse(tinyByteLevel(f, nil))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", "hello world", "<|end|>x<tool>", "中文 😀\n\t  ", "'s 'LL 123"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			if _, err := tok.Encode(s, false); err == nil {
				t.Fatal("invalid UTF-8 accepted")
			}
			return
		}
		ids, err := tok.Encode(s, false)
		if err != nil {
			t.Fatal(err)
		}
		got, err := tok.Decode(ids, false)
		if err != nil || got != s {
			t.Fatalf("round trip %q -> %v -> %q (%v)", s, ids, got, err)
		}
		sd := tok.NewStreamDecoder(false)
		var b strings.Builder
		for _, id := range ids {
			d, err := sd.Add(id)
			if err != nil {
				t.Fatal(err)
			}
			b.WriteString(d)
		}
		b.WriteString(sd.Flush())
		if b.String() != s {
			t.Fatalf("stream %q, want %q", b.String(), s)
		}
	})
}
