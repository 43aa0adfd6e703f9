package calcdata

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/recipe/bpetrain"
	"github.com/toolrl/toolrl/tokenizer"
)

// TestTokenizerParity checks that the project's HF tokenizer (what the actor
// feeds) encodes the calc data exactly as the BPE trainer's own encoder does
// (what the trainer trained on), segment by segment.
func TestTokenizerParity(t *testing.T) {
	tok, err := bpetrain.Train(Corpus(TrainExamples(3000, DefaultMix(), HeldOut)), 512)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := tok.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	hf, err := tokenizer.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"", " ", "a]b", "[CALC: (1+2)*3]] = 9].", "\n\nÜber  ☃ tabs\tand   spaces  ", "<|endoftext|>"}
	for _, ex := range TrainExamples(500, DefaultMix(), HeldOut) {
		texts = append(texts, Render(ex.Prompt))
		for _, s := range ex.Segments {
			texts = append(texts, s.Text)
		}
	}
	for _, s := range texts {
		for _, special := range []bool{false, true} {
			want := tok.Encode(s, special)
			if s == "<|endoftext|>" {
				continue // added tokens are matched by the HF tokenizer only
			}
			got, err := hf.Encode(s, special)
			if err != nil {
				t.Fatalf("tokenizer.Encode(%q): %v", s, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("Encode(%q, %v): tokenizer %v, bpetrain %v", s, special, got, want)
			}
		}
	}
}
