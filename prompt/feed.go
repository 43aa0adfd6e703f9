package prompt

import "context"

// Feed hands prompts to the orchestrator's runner (orchestrator.RunOptions.Feed).
type Feed interface {
	// Next returns the next prompt. With block false it returns at once
	// (ok false when none is ready); with block true it may wait. ok false
	// with a nil error and block true means the feed is exhausted.
	Next(ctx context.Context, block bool) (p Prompt, ok bool, err error)
	// Done is called once the prompt's group is durably written, or found
	// already written (resume, a prompt fed twice).
	Done(ctx context.Context, p Prompt) error
}

// Refuser is implemented by a Feed that must hear of the prompts
// the runner refuses: prompts it can never sample (their tokens leave no
// room under the model's context). The runner calls Refuse instead of Done,
// with why, e.g. "prompt 2100 tokens, context 2048", and goes on with the
// other prompts; the feed must not hand p out again (RedisFeed dead-letters
// it). A feed without Refuse simply never sees p again (List hands
// out each prompt once).
type Refuser interface {
	Refuse(ctx context.Context, p Prompt, reason string) error
}

// List is a Feed over a fixed list of prompts, handed out in
// order, each once; it never blocks. The runner uses one for a job's prompts
// file, and callers that already hold the prompts (an iteration's batch, the
// held-out set) pass one as orchestrator.RunOptions.Feed.
type List struct {
	// Prompts are fed in order.
	Prompts []Prompt
	next    int
}

// Next implements Feed.
func (f *List) Next(context.Context, bool) (Prompt, bool, error) {
	if f.next >= len(f.Prompts) {
		return Prompt{}, false, nil
	}
	f.next++
	return f.Prompts[f.next-1], true, nil
}

// Done implements Feed: a list has nothing to acknowledge.
func (f *List) Done(context.Context, Prompt) error { return nil }
