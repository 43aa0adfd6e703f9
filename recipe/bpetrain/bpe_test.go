package bpetrain

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
)

var corpus = []string{
	"Question: Anna has 12 apples. Anna buys 5 more. How many apples does Anna have now?\nAnswer: [CALC: 12+5] = 17. The answer is 17.",
	"Question: What is 345 times 7?\nAnswer: [CALC: 345*7] = 2415. The answer is 2415.",
	"Question: What is 3 plus 4?\nAnswer: The answer is 7.",
	"Question: Add 12 and 30, then multiply the sum by 4.\nAnswer: [CALC: (12+30)*4] = 168. The answer is 168.",
}

func train(t *testing.T) *Tokenizer {
	t.Helper()
	tok, err := Train(corpus, 400)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestRoundTrip(t *testing.T) {
	tok := train(t)
	for _, s := range append(corpus, "ünïcödé ✓ and\ttabs\n\n  spaces]]).") {
		ids := tok.Encode(s, false)
		if got := tok.Decode(ids); got != s {
			t.Fatalf("decode(encode(%q)) = %q", s, got)
		}
	}
	ids := tok.Encode("hi", true)
	if ids[0] != tok.SpecialID() {
		t.Fatalf("addSpecial did not prepend BOS: %v", ids)
	}
}

func TestBracketNeverMerges(t *testing.T) {
	tok := train(t)
	for id, v := range tok.Vocab {
		if strings.Contains(v, "]") && v != "]" {
			t.Fatalf("token %d %q joins ] with other text", id, v)
		}
	}
	got := PreTokenize("[CALC: (1+2)*3]. = 9])")
	want := []string{"[CALC", ":", " (", "1", "+", "2", ")*", "3", "]", ".", " =", " ", "9", "]", ")"}
	if !slices.Equal(got, want) {
		t.Fatalf("PreTokenize = %q, want %q", got, want)
	}
}

func TestMergesShortenAndDigitsStaySingle(t *testing.T) {
	tok := train(t)
	s := corpus[0]
	if n := len(tok.Encode(s, false)); n >= len(s)*6/10 {
		t.Fatalf("%d tokens for %d bytes: merges did not help", n, len(s))
	}
	for _, v := range tok.Vocab {
		digits := 0
		for _, r := range v {
			if r >= '0' && r <= '9' {
				digits++
			}
		}
		if digits > 1 {
			t.Fatalf("token %q holds more than one digit", v)
		}
	}
}

func TestJSONRoundTripAndDeterminism(t *testing.T) {
	a, b := train(t), train(t)
	ja, _ := a.MarshalJSON()
	jb, _ := b.MarshalJSON()
	if !bytes.Equal(ja, jb) {
		t.Fatal("training is not deterministic")
	}
	back, err := Read(bytes.NewReader(ja))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Vocab, a.Vocab) || !reflect.DeepEqual(back.Merges, a.Merges) {
		t.Fatal("tokenizer.json round trip changed vocab or merges")
	}
	for _, s := range corpus {
		if !slices.Equal(back.Encode(s, true), a.Encode(s, true)) {
			t.Fatalf("reloaded tokenizer encodes %q differently", s)
		}
	}
}
