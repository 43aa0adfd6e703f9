package calcdata

import "github.com/toolrl/toolrl/model/train"

// Encoder is the tokenizer the training data is encoded with; it must be the
// tokenizer the actor feeds (models/calc/tokenizer.json).
type Encoder interface {
	// Encode tokenizes text; addSpecial adds the post-processor's BOS.
	Encode(text string, addSpecial bool) []int32
}

// Sequence encodes ex exactly as a rollout feeds it: Encode(prompt, true),
// then each completion segment encoded on its own with addSpecial=false (tool
// results are injected as tokens and never re-tokenized with their
// neighbours), then eos. Prompt and tool tokens have loss mask 0; the policy's
// tokens and the final eos have mask 1.
func Sequence(enc Encoder, ex Example, eos int32) train.Sequence {
	tokens := enc.Encode(Render(ex.Prompt), true)
	mask := make([]uint8, len(tokens))
	for _, seg := range ex.Segments {
		ids := enc.Encode(seg.Text, false)
		tokens = append(tokens, ids...)
		for range ids {
			if seg.Tool {
				mask = append(mask, 0)
			} else {
				mask = append(mask, 1)
			}
		}
	}
	return train.Sequence{Tokens: append(tokens, eos), LossMask: append(mask, 1)}
}

// Corpus returns the texts the tokenizer is trained on: the rendered prompt
// and the completion of each example.
func Corpus(examples []Example) []string {
	out := make([]string, 0, len(examples))
	for _, ex := range examples {
		out = append(out, Render(ex.Prompt)+ex.Text())
	}
	return out
}
