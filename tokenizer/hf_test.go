package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestHFBackend runs the goldens through the Rust backend when it is built in
// (-tags hftokenizers) and checks the stub's error otherwise.
func TestHFBackend(t *testing.T) {
	if !HFAvailable {
		if _, err := LoadHF("testdata/tokenizers.txt"); err != ErrHFDisabled {
			t.Fatalf("LoadHF without the tag: %v, want ErrHFDisabled", err)
		}
		t.Skip("built without -tags hftokenizers")
	}
	runGoldenParity(t, func(t *testing.T, e goldenEntry) Interface {
		path := filepath.Join(t.TempDir(), "tokenizer.json")
		if err := os.WriteFile(path, loadGoldenJSON(t, e), 0o644); err != nil {
			t.Fatal(err)
		}
		h, err := LoadHF(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		return h
	})
}

// TestVocabInfoMatchesTokenizer checks the light look-up table the Rust
// backend uses against the full pipeline's.
func TestVocabInfoMatchesTokenizer(t *testing.T) {
	data := tinyByteLevel(t, nil)
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	v, err := parseVocabInfo(data)
	if err != nil {
		t.Fatal(err)
	}
	for id := int32(0); id <= tok.MaxID(); id++ {
		a, okA := tok.IDToToken(id)
		b, okB := v.idToToken(id)
		if a != b || okA != okB {
			t.Fatalf("id %d: %q %v vs %q %v", id, a, okA, b, okB)
		}
		if okA {
			if got, _ := v.tokenToID(a); got != id {
				t.Fatalf("token %q: %d vs %d", a, got, id)
			}
		}
	}
	if len(v.byTok) != tok.VocabSize() {
		t.Fatalf("vocab size %d vs %d", len(v.byTok), tok.VocabSize())
	}
	if s1, s2 := tok.Special(), v.special; s1.BOS != s2.BOS || s1.EOS != s2.EOS || !slices.Equal(s1.EOSIDs, s2.EOSIDs) {
		t.Fatalf("special %+v vs %+v", s1, s2)
	}
}
