package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// tinySentencePiece builds a SentencePiece-style BPE (byte fallback, Llama-2
// decoder chain, or a Metaspace one).
func tinySentencePiece(t *testing.T, metaspace bool) *Tokenizer {
	t.Helper()
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := 0; b < 256; b++ {
		vocab[fmt.Sprintf("<0x%02X>", b)] = 3 + b
	}
	for _, tok := range []string{"▁", "▁Hello", "▁world", "H", "e", "l", "o", "w", "r", "d", "▁▁"} {
		vocab[tok] = len(vocab)
	}
	decoder := map[string]any{"type": "Sequence", "decoders": []any{
		map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
		map[string]any{"type": "ByteFallback"},
		map[string]any{"type": "Fuse"},
		map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
	}}
	if metaspace {
		decoder = map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first"},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
		}}
	}
	doc := map[string]any{
		"added_tokens": []any{
			map[string]any{"id": 0, "content": "<unk>", "special": true},
			map[string]any{"id": 1, "content": "<s>", "special": true},
			map[string]any{"id": 2, "content": "</s>", "special": true},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"decoder": decoder,
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}, "byte_fallback": true, "unk_token": "<unk>", "fuse_unk": true},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if tok.pieces == nil {
		t.Fatal("the SentencePiece fast path did not engage")
	}
	return tok
}

func TestPieceDecoderStreamEqualsDecode(t *testing.T) {
	for _, metaspace := range []bool{false, true} {
		tok := tinySentencePiece(t, metaspace)
		id := func(s string) int32 { v, _ := tok.TokenToID(s); return v }
		seqs := [][]int32{
			{id("▁Hello"), id("▁world")},
			{id("<s>"), id("▁Hello"), id("▁")},
			{id("▁▁"), id("H")},
			{id("▁"), id("▁"), id("w")},
			{id("<0xE4>"), id("<0xBD>"), id("<0xA0>"), id("▁world")},     // 你 by byte fallback
			{id("▁Hello"), id("<0xE4>"), id("<0xBD>")},                   // unfinished at the end
			{id("<0xE4>"), id("H"), id("<0x20>"), id("<0x20>"), id("o")}, // invalid run, spaces by bytes
			{id("<0x20>"), id("<0x20>"), id("H")},
			{id("</s>"), id("▁Hello")},
		}
		for _, ids := range seqs {
			for _, skip := range []bool{false, true} {
				want, err := tok.Decode(ids, skip)
				if err != nil {
					t.Fatal(err)
				}
				sd := tok.NewStreamDecoder(skip)
				var got strings.Builder
				for _, x := range ids {
					d, err := sd.Add(x)
					if err != nil {
						t.Fatal(err)
					}
					if !utf8ValidString(d) {
						t.Fatalf("delta %q splits a rune", d)
					}
					got.WriteString(d)
				}
				got.WriteString(sd.Flush())
				if got.String() != want {
					t.Errorf("metaspace=%v skip=%v ids %v: stream %q, Decode %q", metaspace, skip, ids, got.String(), want)
				}
				// A second sequence on the same decoder starts afresh.
				d2, _ := sd.Add(ids[0])
				d2 += sd.Flush()
				if w2, _ := tok.Decode(ids[:1], skip); d2 != w2 {
					t.Errorf("after Flush: %q, want %q", d2, w2)
				}
			}
		}
	}
}

// The fast path must equal the generic decoder chain (which the goldens hold
// to the reference) on any id sequence.
func TestPieceDecoderEqualsChain(t *testing.T) {
	for _, metaspace := range []bool{false, true} {
		tok := tinySentencePiece(t, metaspace)
		rng := uint64(1)
		next := func(n int) int {
			rng = rng*6364136223846793005 + 1442695040888963407
			return int(rng>>33) % n
		}
		for i := 0; i < 3000; i++ {
			ids := make([]int32, 1+next(8))
			for k := range ids {
				if next(3) == 0 {
					ids[k] = int32(3 + 0xE0 + next(32)) // lead and continuation bytes
				} else {
					ids[k] = int32(next(int(tok.MaxID()) + 1))
				}
			}
			for _, skip := range []bool{false, true} {
				fast, _ := tok.Decode(ids, skip)
				var toks []string
				for _, id := range ids {
					if !tok.skip(id, skip) {
						toks = append(toks, tok.idTokens[id])
					}
				}
				out, err := tok.decoder.decodeChain(toks)
				if err != nil {
					t.Fatal(err)
				}
				if slow := strings.Join(out, ""); fast != slow {
					t.Fatalf("metaspace=%v skip=%v ids %v: fast %q, chain %q", metaspace, skip, ids, fast, slow)
				}
			}
		}
	}
}
