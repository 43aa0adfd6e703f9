package orchestrator

import (
	"context"
	"fmt"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/sink"
	"github.com/toolrl/toolrl/traj"
)

// end finishes a paused sequence for the given reason.
func (r *runner) end(ctx context.Context, sr *sampleRun, reason traj.FinishReason) error {
	sr.seq.Finish(reason)
	sr.finish = reason
	return r.finished(ctx, sr)
}

// finished marks a sample done and, when its whole group is, writes it.
func (r *runner) finished(ctx context.Context, sr *sampleRun) error {
	g := sr.group
	g.finished++
	if g.finished < len(g.samples) {
		return nil
	}
	group, correct, err := r.buildGroup(ctx, g)
	if err != nil {
		return err
	}
	written, err := r.sink.WriteGroup(ctx, &group)
	if err != nil {
		return fmt.Errorf("write group %s to %s: %w", g.id, sink.DisplayOut(r.job.Out.Get()), err)
	}
	if err := r.feed.Done(ctx, g.prompt); err != nil {
		return fmt.Errorf("mark prompt %s done: %w", g.prompt.Key(), err)
	}
	sampledBefore := r.summary.SampledTokens
	if written {
		r.summary.addGroup(&group, correct)
	} else {
		r.summary.GroupsDuplicate++
	}
	sampled := r.summary.SampledTokens - sampledBefore
	r.progress.Advance(1, len(group.Trajectories), sampled)
	for _, s := range g.samples {
		delete(r.bySeq, s.seq)
	}
	r.inflight -= len(g.samples)
	return nil
}

// buildGroup turns a finished group's sequences into validated trajectories
// with rewards (and reference logprobs when a reference model is set).
func (r *runner) buildGroup(ctx context.Context, g *groupRun) (traj.Group, []bool, error) {
	out := make([]traj.Trajectory, len(g.samples))
	correct := make([]bool, len(g.samples))
	answer := g.prompt.AnswerText()
	for i, sr := range g.samples {
		s := sr.seq
		// The temperature the logprobs were computed at, an explicit 0 when
		// greedy: a learner recomputes them at it.
		temperature := r.sampling.Temperature
		t := traj.Trajectory{
			Schema: traj.TrajectorySchema, ID: traj.TrajectoryID(r.job.ID.Get(), g.prompt.ID, g.prompt.Iteration, s.Index()),
			JobID: r.job.ID.Get(), PromptID: g.prompt.ID, Iteration: g.prompt.Iteration, GroupID: g.id, GroupSize: len(g.samples),
			SampleIndex: s.Index(), PolicyVersion: g.version, Seed: s.Seed(), Temperature: &temperature, Model: g.model,
			Tokens: s.Tokens(), PromptLen: s.PromptLen(), LossMask: s.LossMask(), Logprobs: s.Logprobs(),
			Segments: r.attachCalls(s, s.Segments(), sr.calls), FinishReason: sr.finish,
			Answer: answer, Meta: g.prompt.Meta,
		}
		if t.FinishReason == "" {
			t.FinishReason = s.FinishReason()
		}
		correct[i] = r.job.Rewards.Score(&t, answer)
		out[i] = t
	}
	if r.ref != nil {
		if err := r.scoreRef(ctx, out); err != nil {
			return traj.Group{}, nil, err
		}
	}
	group := traj.NewGroup(out)
	if err := group.Validate(); err != nil {
		return traj.Group{}, nil, fmt.Errorf("built an invalid group (a bug in toolrl): %w", err)
	}
	return group, correct, nil
}

// attachCalls puts each call on the model segment of its turn (the one that
// ended in it) and, with its result, on the tool segment that answers it.
// A turn with several calls (turn mode) becomes the layout traj.Validate
// describes: its model segment split after each call but the last (where
// the call closed), its tool segment after each result (the format's
// ToolTurn.Ends), each piece carrying its own call. Tool text is decoded
// from the piece's tokens as the actor decodes a tool segment's.
func (r *runner) attachCalls(s *actor.Sequence, segs []traj.Segment, calls []callRecord) []traj.Segment {
	if len(calls) == 0 {
		return segs
	}
	byTurn := map[int][]callRecord{}
	for _, c := range calls {
		byTurn[c.turn] = append(byTurn[c.turn], c)
	}
	response := s.Tokens()[s.PromptLen():]
	out := make([]traj.Segment, 0, len(segs)+len(calls))
	for _, seg := range segs {
		cs := byTurn[seg.Turn]
		switch {
		case seg.Kind == traj.SegmentModel && len(cs) > 0:
			out = append(out, splitModel(seg, cs)...)
		case seg.Kind == traj.SegmentTool:
			var answered []callRecord
			for _, c := range cs {
				if c.result != nil {
					answered = append(answered, c)
				}
			}
			out = append(out, r.splitTool(seg, answered, response)...)
		default:
			out = append(out, seg)
		}
	}
	return out
}

// splitModel gives each call of a turn its own piece of the turn's model
// segment: piece i ends after the token that closed call i, the last runs
// to the segment's end. Boundaries are kept strictly increasing, so a
// token that closed two calls gives the second the next token (no piece is
// empty).
func splitModel(seg traj.Segment, cs []callRecord) []traj.Segment {
	out := make([]traj.Segment, len(cs))
	start, byteAt := seg.Start, 0
	for i, c := range cs {
		p := seg
		call := c.call
		p.Start, p.Call, p.Text = start, &call, seg.Text[byteAt:]
		if i < len(cs)-1 {
			end := min(max(seg.Start+c.closeTokens, start+1), seg.End-(len(cs)-1-i))
			b := min(max(c.closeBytes, byteAt), len(seg.Text))
			p.End, p.Text = end, seg.Text[byteAt:b]
			start, byteAt = end, b
		}
		out[i] = p
	}
	return out
}

// splitTool gives each answered call its part of the turn's tool segment.
func (r *runner) splitTool(seg traj.Segment, answered []callRecord, response []int32) []traj.Segment {
	if len(answered) == 0 {
		return []traj.Segment{seg}
	}
	if len(answered) == 1 {
		call, result := answered[0].call, *answered[0].result
		seg.Call, seg.Result = &call, &result
		return []traj.Segment{seg}
	}
	out := make([]traj.Segment, len(answered))
	start := seg.Start
	for i, c := range answered {
		end := c.toolEnd
		if i == len(answered)-1 || end <= start || end > seg.End {
			end = seg.End
		}
		call, result := c.call, *c.result
		text, _ := r.pol.Tokenizer().Decode(response[start:end], true)
		out[i] = traj.Segment{Kind: traj.SegmentTool, Turn: seg.Turn, Start: start, End: end, Text: text, Call: &call, Result: &result}
		start = end
	}
	return out
}

func (r *runner) scoreRef(ctx context.Context, ts []traj.Trajectory) error {
	seqs := make([][]int32, len(ts))
	lens := make([]int, len(ts))
	for i := range ts {
		seqs[i], lens[i] = ts[i].Tokens, ts[i].PromptLen
	}
	// The reference is scored at the sampling temperature, the quantity the
	// recorded logprobs are (T = 1 when greedy), so that logp - logp_ref
	// compares like with like, as verl's reference worker does.
	temperature := r.sampling.Temperature
	if temperature == 0 {
		temperature = 1
	}
	ref, err := r.ref.ScoreTemperature(ctx, seqs, lens, temperature)
	if err != nil {
		return fmt.Errorf("reference scoring: %w", err)
	}
	for i := range ts {
		lp := ref[i]
		for j, m := range ts[i].LossMask {
			if m == 0 {
				lp[j] = 0
			}
		}
		ts[i].RefLogprobs = lp
	}
	return nil
}

// groupID is the id of p's group in this job: (job, prompt, iteration).
func (r *runner) groupID(p prompt.Prompt) string {
	return traj.GroupID(r.job.ID.Get(), p.ID, p.Iteration)
}

// alreadyDone reports whether p's group was written before the run (resume)
// or was started earlier in it (a prompt fed twice), counting it and telling
// the feed it is done; such a prompt is not sampled again.
func (r *runner) alreadyDone(ctx context.Context, p prompt.Prompt) (bool, error) {
	id := r.groupID(p)
	switch {
	case r.done[id]:
		r.summary.GroupsResumed++
	case r.seen[id]:
		r.summary.GroupsDuplicate++
	default:
		return false, nil
	}
	if err := r.feed.Done(ctx, p); err != nil {
		return true, fmt.Errorf("mark prompt %s done: %w", p.Key(), err)
	}
	return true, nil
}

// startGroup queues p's group in the engine, or refuses p when its tokens
// leave no room under the model's context (refuse).
func (r *runner) startGroup(ctx context.Context, p prompt.Prompt) error {
	if err := p.CheckIdentity(); err != nil {
		return fmt.Errorf("prompt %s (line %d): %w", p.ID, p.Line, err)
	}
	ids, err := r.format.PromptTokens(&p)
	if err != nil {
		return err
	}
	if limit := r.eng.MaxSeqLen(); len(ids) >= limit {
		// The engine would refuse it (AddGroup), and so would every rerun:
		// refuse this prompt alone rather than fail the job.
		return r.refuse(ctx, p, fmt.Sprintf("prompt %d tokens, context %d", len(ids), limit))
	}
	g := &groupRun{prompt: p, id: r.groupID(p), version: r.version, model: r.model}
	r.seen[g.id] = true
	// Seeds derive from the prompt's key: its id in iteration 0 (the seeds
	// of a plain rollout), id@k in iteration k, so each iteration samples
	// anew and none can take another prompt's seeds (ids have no '@').
	seeds := make([]uint64, r.job.GroupSize.Get())
	for i := range seeds {
		seeds[i] = actor.SampleSeed(r.job.Seed.Get(), p.Key(), i)
	}
	detectors, err := r.newDetectors()
	if err != nil {
		return err
	}
	req := actor.GroupRequest{ID: g.id, Prompt: ids, Seeds: seeds, Sampling: r.sampling, NewDetector: detectors}
	if f := r.opts.Hooks.Forced; f != nil {
		for i := range seeds {
			req.Forced = append(req.Forced, f(i))
		}
	}
	seqs, err := r.eng.AddGroup(req)
	if err != nil {
		return fmt.Errorf("prompt %s (line %d): %w", p.ID, p.Line, err)
	}
	g.seqs = seqs
	for _, s := range seqs {
		d, ok := s.Detector().(*callDetector)
		if !ok {
			return fmt.Errorf("sequence %s/%d has no call detector", g.id, s.Index())
		}
		sr := &sampleRun{group: g, seq: s, detector: d, episode: r.exec.NewSeededEpisode(s.Seed())}
		g.samples = append(g.samples, sr)
		r.bySeq[s] = sr
	}
	r.inflight += len(seqs)
	return nil
}

// refuse counts and logs a prompt the run can never sample and tells the
// feed (prompt.Refuser), which drops it: prompt.RedisFeed dead-letters it with reason.
func (r *runner) refuse(ctx context.Context, p prompt.Prompt, reason string) error {
	r.summary.PromptsRefused++
	attrs := []any{"prompt", p.Key(), "reason", reason}
	if p.Line > 0 {
		attrs = append(attrs, "line", p.Line) // a prompts file's; a fed prompt has none
	}
	r.log.Warn("refused prompt", attrs...)
	if rf, ok := r.feed.(prompt.Refuser); ok {
		if err := rf.Refuse(ctx, p, reason); err != nil {
			return fmt.Errorf("refuse prompt %s: %w", p.Key(), err)
		}
	}
	return nil
}
