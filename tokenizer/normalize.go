package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before pre-tokenization (HF normalizers). Offsets
// are not tracked: toolrl needs ids and text, not alignments.
type normalizer interface {
	normalize(s string) (string, error)
}

func buildNormalizer(raw json.RawMessage, where string) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := decodeComponent(raw, where)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := buildSequence(c.Normalizers, where, "normalizers", func(sub json.RawMessage, at string, _ int) (normalizer, error) {
			return buildNormalizer(sub, at)
		})
		if err != nil {
			return nil, err
		}
		return sequenceNormalizer(seq), nil
	case "NFC":
		return unicodeNormalizer{norm.NFC, refNFCExceptions}, nil
	case "NFD":
		return unicodeNormalizer{norm.NFD, refNFDExceptions}, nil
	case "NFKC":
		return unicodeNormalizer{norm.NFKC, refNFKCExceptions}, nil
	case "NFKD":
		return unicodeNormalizer{norm.NFKD, refNFKDExceptions}, nil
	case "Lowercase":
		return lowercaseNormalizer{}, nil
	case "Replace":
		m, err := buildPattern(c.Pattern, where)
		if err != nil {
			return nil, err
		}
		if c.Content == nil {
			return nil, fmt.Errorf("tokenizer.json %s: Replace normalizer without content", where)
		}
		return replaceNormalizer{m, *c.Content}, nil
	case "Prepend":
		if c.Prepend == nil {
			return nil, fmt.Errorf("tokenizer.json %s: Prepend normalizer without prepend", where)
		}
		return prependNormalizer{prefix: *c.Prepend}, nil
	case "Append":
		if c.Append == nil {
			return nil, fmt.Errorf("tokenizer.json %s: Append normalizer without append", where)
		}
		return prependNormalizer{suffix: *c.Append}, nil
	case "Strip":
		return stripNormalizer{left: boolOr(c.Left, true), right: boolOr(c.Right, true)}, nil
	case "StripAccents":
		return stripAccentsNormalizer{}, nil
	}
	return nil, fmt.Errorf("tokenizer.json %s: unsupported normalizer %q", where, c.Type)
}

// buildPattern compiles a {"String"}|{"Regex"} pattern.
func buildPattern(p *patternJSON, where string) (matcher, error) {
	switch {
	case p == nil:
		return nil, fmt.Errorf("tokenizer.json %s: missing pattern", where)
	case p.String != nil:
		return stringMatcher{*p.String}, nil
	case p.Regex != nil:
		m, err := newRegexMatcher(*p.Regex, true)
		if err != nil {
			return nil, fmt.Errorf("tokenizer.json %s: %w", where, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("tokenizer.json %s: pattern is neither String nor Regex", where)
}

type sequenceNormalizer []normalizer

func (seq sequenceNormalizer) normalize(s string) (string, error) {
	var err error
	for _, n := range seq {
		if s, err = n.normalize(s); err != nil {
			return "", err
		}
	}
	return s, nil
}

// unicodeNormalizer applies a Unicode normalization form with Go's tables,
// except around the characters where the reference's (older) tables differ:
// those are normalized as the reference does and act as boundaries.
type unicodeNormalizer struct {
	form       norm.Form
	exceptions map[rune]string
}

func (u unicodeNormalizer) normalize(s string) (string, error) {
	var b strings.Builder
	last := 0
	for i, r := range s {
		if r < utf8.RuneSelf {
			continue
		}
		ex, ok := u.exceptions[r]
		if !ok {
			continue
		}
		if b.Cap() == 0 {
			b.Grow(len(s) + 8)
		}
		b.WriteString(u.formString(s[last:i]))
		b.WriteString(ex)
		last = i + utf8.RuneLen(r)
	}
	if last == 0 {
		return u.formString(s), nil
	}
	b.WriteString(u.formString(s[last:]))
	return b.String(), nil
}

func (u unicodeNormalizer) formString(s string) string {
	if u.form.IsNormalString(s) {
		return s
	}
	return u.form.String(s)
}

// lowercaseNormalizer lowercases rune by rune like Rust's char::to_lowercase
// (no final-sigma context), with the reference's own mapping (refLower).
type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) (string, error) {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r < utf8.RuneSelf:
			if r >= 'A' && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteByte(byte(r))
		default:
			if l, ok := refLower[r]; ok {
				b.WriteString(l)
			} else {
				b.WriteRune(r)
			}
		}
	}
	return b.String(), nil
}

type replaceNormalizer struct {
	pattern matcher
	content string
}

func (r replaceNormalizer) normalize(s string) (string, error) {
	spans, err := r.pattern.find(s, nil)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, sp := range spans {
		if sp.match {
			b.WriteString(r.content)
		} else {
			b.WriteString(s[sp.start:sp.end])
		}
	}
	return b.String(), nil
}

// prependNormalizer is HF's Prepend (prefix) or Append (suffix); neither
// touches an empty string.
type prependNormalizer struct{ prefix, suffix string }

func (p prependNormalizer) normalize(s string) (string, error) {
	if s == "" {
		return s, nil
	}
	return p.prefix + s + p.suffix, nil
}

type stripNormalizer struct{ left, right bool }

func (st stripNormalizer) normalize(s string) (string, error) {
	if st.left {
		s = strings.TrimLeftFunc(s, isS)
	}
	if st.right {
		s = strings.TrimRightFunc(s, isS)
	}
	return s, nil
}

type stripAccentsNormalizer struct{}

func (stripAccentsNormalizer) normalize(s string) (string, error) {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.M, r) {
			return -1
		}
		return r
	}, s), nil
}
