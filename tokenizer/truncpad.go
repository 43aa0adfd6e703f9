package tokenizer

import (
	"encoding/json"
	"fmt"
)

// truncation is tokenizer.json's "truncation" for single sequences: the
// encoding is cut to maxLength (less the post-processor's special tokens when
// they are added), keeping the head (Right) or the tail (Left).
type truncation struct {
	maxLength int
	left      bool
}

// padding is tokenizer.json's "padding" for a single sequence: BatchLongest
// pads to the sequence's own length (a no-op unless padToMultipleOf is set),
// Fixed to a given length.
type padding struct {
	fixed      int // 0: BatchLongest
	multipleOf int
	left       bool
	padID      int32
}

func parseTruncation(raw json.RawMessage) (*truncation, error) {
	if isNull(raw) {
		return nil, nil
	}
	var tj struct {
		MaxLength *int   `json:"max_length"`
		Direction string `json:"direction"`
		Strategy  string `json:"strategy"`
	}
	if err := json.Unmarshal(raw, &tj); err != nil {
		return nil, fmt.Errorf("tokenizer.json truncation: %w", err)
	}
	if tj.MaxLength == nil || *tj.MaxLength < 0 {
		return nil, fmt.Errorf("tokenizer.json truncation: missing or negative max_length")
	}
	switch tj.Direction {
	case "", "Right", "Left":
	default:
		return nil, fmt.Errorf("tokenizer.json truncation: unsupported direction %q", tj.Direction)
	}
	switch tj.Strategy {
	case "", "LongestFirst", "OnlyFirst", "OnlySecond":
	default:
		return nil, fmt.Errorf("tokenizer.json truncation: unsupported strategy %q", tj.Strategy)
	}
	return &truncation{maxLength: *tj.MaxLength, left: tj.Direction == "Left"}, nil
}

func parsePadding(raw json.RawMessage) (*padding, error) {
	if isNull(raw) {
		return nil, nil
	}
	var pj struct {
		Strategy        json.RawMessage `json:"strategy"`
		Direction       string          `json:"direction"`
		PadToMultipleOf *int            `json:"pad_to_multiple_of"`
		PadID           int32           `json:"pad_id"`
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("tokenizer.json padding: %w", err)
	}
	p := &padding{left: pj.Direction == "Left", padID: pj.PadID}
	if pj.Direction != "" && pj.Direction != "Left" && pj.Direction != "Right" {
		return nil, fmt.Errorf("tokenizer.json padding: unsupported direction %q", pj.Direction)
	}
	if pj.PadToMultipleOf != nil {
		p.multipleOf = *pj.PadToMultipleOf
	}
	var name string
	var fixed struct {
		Fixed *int `json:"Fixed"`
	}
	switch {
	case json.Unmarshal(pj.Strategy, &name) == nil && name == "BatchLongest":
	case json.Unmarshal(pj.Strategy, &fixed) == nil && fixed.Fixed != nil:
		p.fixed = *fixed.Fixed
	default:
		return nil, fmt.Errorf("tokenizer.json padding: unsupported strategy %s", pj.Strategy)
	}
	return p, nil
}

// apply truncates ids; nSpecial is the number of ids the post-processor is
// about to add.
func (tr *truncation) apply(ids []int32, nSpecial int) []int32 {
	max := tr.maxLength
	if nSpecial > 0 {
		max -= nSpecial
		if max < 0 {
			max = 0
		}
	}
	if len(ids) <= max {
		return ids
	}
	if tr.left {
		return ids[len(ids)-max:]
	}
	return ids[:max]
}

func (p *padding) apply(ids []int32) []int32 {
	target := len(ids)
	if p.fixed > 0 {
		target = p.fixed
	}
	if p.multipleOf > 0 && target%p.multipleOf != 0 {
		target += p.multipleOf - target%p.multipleOf
	}
	if len(ids) >= target {
		return ids
	}
	out := make([]int32, 0, target)
	if p.left {
		for len(out) < target-len(ids) {
			out = append(out, p.padID)
		}
		return append(out, ids...)
	}
	out = append(out, ids...)
	for len(out) < target {
		out = append(out, p.padID)
	}
	return out
}
