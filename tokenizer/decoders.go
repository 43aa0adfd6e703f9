package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// decoder turns token strings back into text pieces (HF decoders'
// decode_chain); the pieces of the last decoder are concatenated.
type decoder interface {
	decodeChain(tokens []string) ([]string, error)
}

func buildDecoder(raw json.RawMessage, where string, bl *byteLevelTables) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := decodeComponent(raw, where)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := buildSequence(c.Decoders, where, "decoders", func(sub json.RawMessage, at string, _ int) (decoder, error) {
			return buildDecoder(sub, at, bl)
		})
		if err != nil {
			return nil, err
		}
		return sequenceDecoder(seq), nil
	case "ByteLevel":
		return byteLevelDecoder{bl}, nil
	case "Metaspace":
		r, w := utf8.DecodeRuneInString(c.Replacement)
		if w == 0 || w != len(c.Replacement) {
			return nil, fmt.Errorf("tokenizer.json %s: Metaspace replacement %q is not one character", where, c.Replacement)
		}
		dropFirst := c.PrependScheme != "never"
		if c.PrependScheme == "" && c.AddPrefixSpace != nil {
			dropFirst = *c.AddPrefixSpace
		}
		return metaspaceDecoder{r, dropFirst}, nil
	case "ByteFallback":
		return byteFallbackDecoder{}, nil
	case "Fuse":
		return fuseDecoder{}, nil
	case "Strip":
		if c.Content == nil {
			return nil, fmt.Errorf("tokenizer.json %s: Strip decoder without content", where)
		}
		r, w := utf8.DecodeRuneInString(*c.Content)
		if w == 0 || w != len(*c.Content) {
			return nil, fmt.Errorf("tokenizer.json %s: Strip content %q is not one character", where, *c.Content)
		}
		return stripDecoder{r, c.Start, c.Stop}, nil
	case "Replace":
		m, err := buildPattern(c.Pattern, where)
		if err != nil {
			return nil, err
		}
		if c.Content == nil {
			return nil, fmt.Errorf("tokenizer.json %s: Replace decoder without content", where)
		}
		return replaceDecoder{replaceNormalizer{m, *c.Content}}, nil
	}
	return nil, fmt.Errorf("tokenizer.json %s: unsupported decoder %q", where, c.Type)
}

type sequenceDecoder []decoder

func (seq sequenceDecoder) decodeChain(tokens []string) ([]string, error) {
	var err error
	for _, d := range seq {
		if tokens, err = d.decodeChain(tokens); err != nil {
			return nil, err
		}
	}
	return tokens, nil
}

type byteLevelDecoder struct{ tables *byteLevelTables }

func (d byteLevelDecoder) decodeChain(tokens []string) ([]string, error) {
	var raw []byte
	for _, t := range tokens {
		b, _ := d.tables.decodeToken(t)
		raw = append(raw, b...)
	}
	return []string{string(appendLossyUTF8(nil, raw))}, nil
}

type metaspaceDecoder struct {
	replacement rune
	dropFirst   bool
}

func (d metaspaceDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		var b strings.Builder
		for _, r := range t {
			if r == d.replacement {
				if i == 0 && d.dropFirst {
					continue
				}
				r = ' '
			}
			b.WriteRune(r)
		}
		out[i] = b.String()
	}
	return out, nil
}

// byteFallbackDecoder joins runs of <0xNN> tokens into text; a run that is
// not valid UTF-8 becomes one U+FFFD per byte.
type byteFallbackDecoder struct{}

func parseByteToken(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	v, err := strconv.ParseUint(t[3:5], 16, 8)
	if err != nil {
		return 0, false
	}
	return byte(v), true
}

func (byteFallbackDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if b, ok := parseByteToken(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out, nil
}

type fuseDecoder struct{}

func (fuseDecoder) decodeChain(tokens []string) ([]string, error) {
	return []string{strings.Join(tokens, "")}, nil
}

type stripDecoder struct {
	content     rune
	start, stop int
}

func (d stripDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		runes := []rune(t)
		startCut := 0
		for k := 0; k < d.start && k < len(runes); k++ {
			if runes[k] != d.content {
				break
			}
			startCut = k + 1
		}
		stopCut := len(runes)
		for k := 0; k < d.stop; k++ {
			idx := len(runes) - k - 1
			if idx < 0 || runes[idx] != d.content {
				break
			}
			stopCut = idx
		}
		if stopCut < startCut {
			stopCut = startCut
		}
		out[i] = string(runes[startCut:stopCut])
	}
	return out, nil
}

type replaceDecoder struct{ r replaceNormalizer }

func (d replaceDecoder) decodeChain(tokens []string) ([]string, error) {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		s, err := d.r.normalize(t)
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}
