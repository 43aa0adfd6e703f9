package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// piece is one split of the input on its way to the model.
type piece struct {
	text string
	// id is the added token this piece is (>= 0), or -1 for text the model
	// must tokenize.
	id int32
	// first: the piece starts at offset 0 of the original input (Metaspace's
	// prepend_scheme "first" depends on it).
	first bool
	// byteLevel: text holds raw bytes that the model must see through the
	// byte-level alphabet (the mapping is applied lazily by the BPE model).
	byteLevel bool
}

// preTokenizer splits pieces further (HF pre-tokenizers). Pieces with id >= 0
// are never touched; empty pieces are dropped.
type preTokenizer interface {
	preTokenize(pieces []piece, sc *bpeScratch) ([]piece, error)
}

// splitEach applies f to every text piece and drops empty results. The
// result lives in one of sc's two piece buffers (not the one pieces is in).
func splitEach(pieces []piece, sc *bpeScratch, f func(p piece, out []piece) ([]piece, error)) ([]piece, error) {
	out := sc.nextPieces()
	var err error
	for _, p := range pieces {
		if p.id >= 0 {
			out = append(out, p)
			continue
		}
		n := len(out)
		if out, err = f(p, out); err != nil {
			return nil, err
		}
		// drop empties in place
		k := n
		for _, q := range out[n:] {
			if q.text != "" {
				out[k] = q
				k++
			}
		}
		out = out[:k]
	}
	return sc.keepPieces(out), nil
}

// splitByMatcher splits p with m and behaviour b.
func splitByMatcher(p piece, out []piece, m matcher, b splitBehavior, invert bool, sc *bpeScratch) ([]piece, error) {
	matches, err := m.find(p.text, sc.spans[:0])
	if err != nil {
		return nil, err
	}
	sc.spans = matches[:0]
	if b != behaviorIsolated || invert {
		matches = applyBehavior(matches, b, invert)
	}
	for _, sp := range matches {
		out = append(out, piece{text: p.text[sp.start:sp.end], id: -1, first: p.first && sp.start == 0, byteLevel: p.byteLevel})
	}
	return out, nil
}

func buildPreTokenizer(raw json.RawMessage, where string, last bool, bl *byteLevelTables) (preTokenizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := decodeComponent(raw, where)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := buildSequence(c.PreTokenizers, where, "pretokenizers", func(sub json.RawMessage, at string, i int) (preTokenizer, error) {
			return buildPreTokenizer(sub, at, last && i == len(c.PreTokenizers)-1, bl)
		})
		if err != nil {
			return nil, err
		}
		return sequencePreTokenizer(seq), nil
	case "ByteLevel":
		bp := &byteLevelPreTokenizer{addPrefixSpace: boolOr(c.AddPrefixSpace, true), lazy: last, tables: bl}
		if boolOr(c.UseRegex, true) {
			if bp.re, err = newRegexMatcher(patternGPT2, true); err != nil {
				return nil, err
			}
		}
		return bp, nil
	case "Split":
		m, err := buildPattern(c.Pattern, where)
		if err != nil {
			return nil, err
		}
		b, err := parseBehavior(c.Behavior)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.json %s: %w", where, err)
		}
		return &splitPreTokenizer{m: m, behavior: b, invert: c.Invert}, nil
	case "Digits":
		b := behaviorContiguous
		if c.IndividualDigits {
			b = behaviorIsolated
		}
		return &splitPreTokenizer{m: runeMatcher(isNumeric), behavior: b}, nil
	case "WhitespaceSplit":
		return &splitPreTokenizer{m: runeMatcher(isS), behavior: behaviorRemoved}, nil
	case "Metaspace":
		return buildMetaspace(c, where)
	}
	return nil, fmt.Errorf("tokenizer.json %s: unsupported pre_tokenizer %q", where, c.Type)
}

type sequencePreTokenizer []preTokenizer

func (seq sequencePreTokenizer) preTokenize(pieces []piece, sc *bpeScratch) ([]piece, error) {
	var err error
	for _, p := range seq {
		if pieces, err = p.preTokenize(pieces, sc); err != nil {
			return nil, err
		}
	}
	return pieces, nil
}

type splitPreTokenizer struct {
	m        matcher
	behavior splitBehavior
	invert   bool
}

func (sp *splitPreTokenizer) preTokenize(pieces []piece, sc *bpeScratch) ([]piece, error) {
	return splitEach(pieces, sc, func(p piece, out []piece) ([]piece, error) {
		if p.byteLevel {
			return nil, fmt.Errorf("pre_tokenizer after a ByteLevel pre_tokenizer is not supported")
		}
		return splitByMatcher(p, out, sp.m, sp.behavior, sp.invert, sc)
	})
}

// byteLevelPreTokenizer is HF's ByteLevel pre-tokenizer: optional prefix
// space, optional GPT-2 regex split, then every byte mapped to its printable
// rune. When it is the last pre-tokenizer the mapping is left to the model
// (lazy), which looks raw bytes up directly.
type byteLevelPreTokenizer struct {
	addPrefixSpace bool
	re             *regexMatcher
	lazy           bool
	tables         *byteLevelTables
}

func (bp *byteLevelPreTokenizer) preTokenize(pieces []piece, sc *bpeScratch) ([]piece, error) {
	return splitEach(pieces, sc, func(p piece, out []piece) ([]piece, error) {
		if bp.addPrefixSpace && !strings.HasPrefix(p.text, " ") {
			p.text = " " + p.text
		}
		n := len(out)
		var err error
		if bp.re != nil {
			if out, err = splitByMatcher(p, out, bp.re, behaviorIsolated, false, sc); err != nil {
				return nil, err
			}
		} else {
			out = append(out, p)
		}
		for i := n; i < len(out); i++ {
			if bp.lazy {
				out[i].byteLevel = true
			} else {
				out[i].text = bp.tables.encode(out[i].text)
			}
		}
		return out, nil
	})
}

// metaspacePreTokenizer is HF's Metaspace: spaces become the replacement
// rune, a replacement is prepended per prepend_scheme, then (split) the text
// is split before every replacement rune.
type metaspacePreTokenizer struct {
	replacement string
	repRune     rune
	prepend     string // "always", "first" or "never"
	split       bool
}

func buildMetaspace(c *componentJSON, where string) (preTokenizer, error) {
	r, w := utf8.DecodeRuneInString(c.Replacement)
	if w == 0 || w != len(c.Replacement) {
		return nil, fmt.Errorf("tokenizer.json %s: Metaspace replacement %q is not one character", where, c.Replacement)
	}
	scheme := c.PrependScheme
	if scheme == "" {
		scheme = "always"
		if c.AddPrefixSpace != nil && !*c.AddPrefixSpace {
			scheme = "never"
		}
	}
	if scheme != "always" && scheme != "first" && scheme != "never" {
		return nil, fmt.Errorf("tokenizer.json %s: unsupported Metaspace prepend_scheme %q", where, scheme)
	}
	return &metaspacePreTokenizer{replacement: c.Replacement, repRune: r, prepend: scheme, split: boolOr(c.Split, true)}, nil
}

func (ms *metaspacePreTokenizer) preTokenize(pieces []piece, sc *bpeScratch) ([]piece, error) {
	return splitEach(pieces, sc, func(p piece, out []piece) ([]piece, error) {
		if p.byteLevel {
			return nil, errors.New("a Metaspace pre_tokenizer after a ByteLevel one is not supported")
		}
		p.text = strings.ReplaceAll(p.text, " ", ms.replacement)
		if !strings.HasPrefix(p.text, ms.replacement) && (ms.prepend == "always" || ms.prepend == "first" && p.first) {
			p.text = ms.replacement + p.text
		}
		if !ms.split {
			return append(out, p), nil
		}
		rep := ms.repRune
		return splitByMatcher(p, out, runeMatcher(func(r rune) bool { return r == rep }), behaviorMergedWithNext, false, sc)
	})
}
