package tokenizer

import (
	"encoding/json"
	"fmt"
)

// postProcessor adds special tokens around an encoded single sequence (HF
// post-processors; toolrl never encodes pairs).
type postProcessor interface {
	process(ids []int32) []int32
}

func buildPostProcessor(raw json.RawMessage, where string) (postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	c, err := decodeComponent(raw, where)
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case "Sequence":
		seq, err := buildSequence(c.Processors, where, "processors", func(sub json.RawMessage, at string, _ int) (postProcessor, error) {
			return buildPostProcessor(sub, at)
		})
		if err != nil {
			return nil, err
		}
		return sequenceProcessor(seq), nil
	case "ByteLevel":
		return nil, nil // offsets only
	case "TemplateProcessing":
		var tp templateProcessor
		for i, pc := range c.Single {
			switch {
			case pc.Sequence != nil:
				tp.pieces = append(tp.pieces, nil)
			case pc.SpecialToken != nil:
				st, ok := c.SpecialTokens[pc.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("tokenizer.json %s.single[%d]: special token %q missing from special_tokens", where, i, pc.SpecialToken.ID)
				}
				tp.pieces = append(tp.pieces, append([]int32{}, st.IDs...))
			default:
				return nil, fmt.Errorf("tokenizer.json %s.single[%d]: neither Sequence nor SpecialToken", where, i)
			}
		}
		return tp, nil
	case "RobertaProcessing", "BertProcessing":
		cls, err := processorToken(c.Cls, where+".cls")
		if err != nil {
			return nil, err
		}
		sep, err := processorToken(c.Sep, where+".sep")
		if err != nil {
			return nil, err
		}
		return templateProcessor{pieces: [][]int32{{cls}, nil, {sep}}}, nil
	}
	return nil, fmt.Errorf("tokenizer.json %s: unsupported post_processor %q", where, c.Type)
}

// processorToken reads a [token, id] pair.
func processorToken(pair []json.RawMessage, where string) (int32, error) {
	var id int32
	if len(pair) != 2 {
		return 0, fmt.Errorf("tokenizer.json %s: want [token, id]", where)
	}
	if err := json.Unmarshal(pair[1], &id); err != nil {
		return 0, fmt.Errorf("tokenizer.json %s: %w", where, err)
	}
	return id, nil
}

type sequenceProcessor []postProcessor

func (seq sequenceProcessor) process(ids []int32) []int32 {
	for _, p := range seq {
		ids = p.process(ids)
	}
	return ids
}

// templateProcessor is TemplateProcessing's single template: nil pieces stand
// for the sequence itself.
type templateProcessor struct{ pieces [][]int32 }

func (tp templateProcessor) process(ids []int32) []int32 {
	n := len(ids)
	for _, p := range tp.pieces {
		n += len(p)
	}
	out := make([]int32, 0, n)
	for _, p := range tp.pieces {
		if p == nil {
			out = append(out, ids...)
		} else {
			out = append(out, p...)
		}
	}
	return out
}
