// Package bpetrain trains a small byte-level BPE tokenizer and writes it as a
// standard Hugging Face tokenizer.json (BPE model, Split + ByteLevel
// pre-tokenizer, ByteLevel decoder, TemplateProcessing that prepends BOS).
//
// The pre-tokenizer regex differs from GPT-2's in two ways, both for the tool
// protocol: every digit is its own pre-token (numbers are copied digit by digit
// from the prompt into the call and from the result into the answer, and a
// number is tokenized the same whatever precedes it), and `]` is always a
// pre-token of its own, so no token ever joins the closing bracket of
// `[CALC: ...]` with the text after it. The actor pauses as soon as the decoded
// text holds `]`; if a token could be `].` or `] =`, the call's last token
// would also carry text that belongs after the tool result.
package bpetrain

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Pattern is the Split pre-tokenizer regex. It has no look-around, so Go's
// regexp (RE2), Oniguruma and fancy-regex all split text the same way
// (leftmost-first alternation).
const Pattern = `\]|[^\r\n\p{L}\p{N}\]]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}\]]+[\r\n]*|\s*[\r\n]+|\s+`

// SpecialToken is the one special token: BOS, EOS and PAD.
const SpecialToken = "<|endoftext|>"

var preTokenRE = regexp.MustCompile(Pattern)

// PreTokenize splits text into the pre-tokens BPE merges within.
func PreTokenize(text string) []string {
	return preTokenRE.FindAllString(text, -1)
}

// byteToRune is GPT-2's bytes_to_unicode: printable bytes map to themselves,
// the others to code points from 256 up, so every byte is a visible rune.
var byteToRune, runeToByte = func() ([256]rune, map[rune]byte) {
	var b2r [256]rune
	r2b := map[rune]byte{}
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			b2r[b] = rune(b)
		} else {
			b2r[b] = rune(256 + n)
			n++
		}
		r2b[b2r[b]] = byte(b)
	}
	return b2r, r2b
}()

// byteLevel maps a string's bytes to their visible runes, one symbol per byte.
func byteLevel(s string) []string {
	out := make([]string, len(s))
	for i := 0; i < len(s); i++ {
		out[i] = string(byteToRune[s[i]])
	}
	return out
}

// Tokenizer is a trained byte-level BPE: ids 0–255 are the bytes (in byte
// order), then one id per merge, then the special token.
type Tokenizer struct {
	// Vocab holds the token strings (byte-level runes) indexed by id.
	Vocab []string
	// Merges holds the merge rules in rank order, as (left, right) token strings.
	Merges [][2]string
	ids    map[string]int32
	ranks  map[[2]string]int
	cache  map[string][]int32
}

// SpecialID is the id of SpecialToken (BOS = EOS = PAD).
func (t *Tokenizer) SpecialID() int32 { return int32(len(t.Vocab) - 1) }

// VocabSize is the number of ids.
func (t *Tokenizer) VocabSize() int { return len(t.Vocab) }

// newTokenizer indexes vocab and merges.
func newTokenizer(vocab []string, merges [][2]string) *Tokenizer {
	t := &Tokenizer{Vocab: vocab, Merges: merges, ids: map[string]int32{}, ranks: map[[2]string]int{}, cache: map[string][]int32{}}
	for i, v := range vocab {
		t.ids[v] = int32(i)
	}
	for i, m := range merges {
		t.ranks[m] = i
	}
	return t
}

// Train learns merges from texts until the vocabulary (bytes + merges +
// the special token) holds vocabSize ids or no pair occurs twice. Ties between
// equally frequent pairs go to the lexicographically smallest (left, right),
// so training is deterministic.
func Train(texts []string, vocabSize int) (*Tokenizer, error) {
	if vocabSize < 257 {
		return nil, fmt.Errorf("bpetrain: vocab size %d < 257 (256 bytes + 1 special)", vocabSize)
	}
	counts := map[string]int{}
	for _, text := range texts {
		for _, w := range PreTokenize(text) {
			counts[w]++
		}
	}
	type word struct {
		syms  []string
		count int
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	words := make([]word, len(keys))
	for i, k := range keys {
		words[i] = word{syms: byteLevel(k), count: counts[k]}
	}
	vocab := make([]string, 256)
	for b := range 256 {
		vocab[b] = string(byteToRune[b])
	}
	var merges [][2]string
	for len(vocab)+1 < vocabSize {
		pairs := map[[2]string]int{}
		for _, w := range words {
			for i := 0; i+1 < len(w.syms); i++ {
				pairs[[2]string{w.syms[i], w.syms[i+1]}] += w.count
			}
		}
		best, bestCount := [2]string{}, 1
		for p, c := range pairs {
			if c > bestCount || (c == bestCount && c > 1 && less(p, best)) {
				best, bestCount = p, c
			}
		}
		if bestCount < 2 {
			break
		}
		merged := best[0] + best[1]
		merges = append(merges, best)
		vocab = append(vocab, merged)
		for wi := range words {
			words[wi].syms = mergePair(words[wi].syms, best, merged)
		}
	}
	vocab = append(vocab, SpecialToken)
	return newTokenizer(vocab, merges), nil
}

func less(a, b [2]string) bool {
	if a[0] != b[0] {
		return a[0] < b[0]
	}
	return a[1] < b[1]
}

// mergePair replaces every non-overlapping occurrence of pair, left to right.
func mergePair(syms []string, pair [2]string, merged string) []string {
	out := syms[:0:0]
	for i := 0; i < len(syms); i++ {
		if i+1 < len(syms) && syms[i] == pair[0] && syms[i+1] == pair[1] {
			out = append(out, merged)
			i++
			continue
		}
		out = append(out, syms[i])
	}
	return out
}

// Encode tokenizes text; addSpecial prepends the BOS (the special token), as
// the tokenizer.json post-processor does. Special-token text inside text is
// not recognised (the calc data never contains it). Not safe for concurrent use
// (it caches words).
func (t *Tokenizer) Encode(text string, addSpecial bool) []int32 {
	var out []int32
	if addSpecial {
		out = append(out, t.SpecialID())
	}
	for _, w := range PreTokenize(text) {
		out = append(out, t.encodeWord(w)...)
	}
	return out
}

// encodeWord applies merges by rank: repeatedly merge the adjacent pair with the
// lowest rank (leftmost first), as HF's BPE model does.
func (t *Tokenizer) encodeWord(w string) []int32 {
	if ids, ok := t.cache[w]; ok {
		return ids
	}
	syms := byteLevel(w)
	for len(syms) > 1 {
		bestRank, bestAt := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := t.ranks[[2]string{syms[i], syms[i+1]}]; ok && (bestRank < 0 || r < bestRank) {
				bestRank, bestAt = r, i
			}
		}
		if bestAt < 0 {
			break
		}
		syms = append(syms[:bestAt+1], syms[bestAt+2:]...)
		syms[bestAt] = t.Merges[bestRank][0] + t.Merges[bestRank][1]
	}
	ids := make([]int32, len(syms))
	for i, s := range syms {
		ids[i] = t.ids[s]
	}
	t.cache[w] = ids
	return ids
}

// Decode turns ids back into text; the special token decodes to nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	var b strings.Builder
	for _, id := range ids {
		if id == t.SpecialID() || id < 0 || int(id) >= len(t.Vocab) {
			continue
		}
		for _, r := range t.Vocab[id] {
			b.WriteByte(runeToByte[r])
		}
	}
	return b.String()
}
