package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/prompt"
	"github.com/toolrl/toolrl/traj"
)

// Hot reload: the runner polls RunOptions.Policy between groups. When the
// source offers a newer version than the loaded one, it stops admitting
// groups, lets those in flight finish on the old version, then verifies the
// new folder against its manifest, loads it and makes a new engine (reload).
// A version that fails is refused once, logged, and never retried; the old
// one keeps running and a newer one is tried when it comes. A prompt whose
// MinPolicyVersion is above the loaded version (the gate) is held until a
// reload reaches it.

// defaultPolicyPoll is RunOptions.PolicyPoll's default.
const defaultPolicyPoll = 200 * time.Millisecond

// pollPolicy asks the source for its latest version, at most every
// PolicyPoll unless force, and records a newer one that is not refused in
// r.next. A source error is logged (once while it repeats) and otherwise
// ignored: the loaded version keeps running.
func (r *runner) pollPolicy(ctx context.Context, force bool) {
	src := r.opts.Policy
	if src == nil || !force && time.Since(r.lastPoll) < r.opts.PolicyPoll {
		return
	}
	r.lastPoll = time.Now()
	ref, ok, err := src.Latest(ctx)
	if err != nil {
		if ctx.Err() == nil && err.Error() != r.lastPollErr {
			r.log.Warn("policy source: cannot read the latest version; the loaded one keeps running",
				"source", fmt.Sprint(src), "loaded", r.version, "error", err)
		}
		r.lastPollErr = err.Error()
		return
	}
	r.lastPollErr = ""
	if !ok || ref.Version <= r.version || r.refused[ref.Version] || r.next != nil && ref.Version <= r.next.Version {
		return
	}
	if r.inflight > 0 {
		r.log.Info("newer policy version: finishing the groups in flight before loading it",
			"version", ref.Version, "loaded", r.version, "sequences_in_flight", r.inflight)
	}
	r.next = &ref
}

// mustWait reports whether p has to wait before its group starts: while a
// newer version waits to be loaded, and while the loaded version is below
// p.MinPolicyVersion (the gate; it polls the source at once the first time
// p is seen, fresh). Without a source a gated prompt is an error.
func (r *runner) mustWait(ctx context.Context, p prompt.Prompt, fresh bool) (bool, error) {
	if p.MinPolicyVersion > r.version {
		if r.opts.Policy == nil {
			return false, fmt.Errorf("prompt %s needs policy version ≥ %d, but the run samples version %d and has no policy source to load a newer one from (--watch)",
				p.Key(), p.MinPolicyVersion, r.version)
		}
		r.pollPolicy(ctx, fresh)
		if fresh && (r.next == nil || r.next.Version < p.MinPolicyVersion) {
			r.log.Info("prompt needs a newer policy: waiting for it", "prompt", p.Key(),
				"min_policy_version", p.MinPolicyVersion, "loaded", r.version, "source", fmt.Sprint(r.opts.Policy))
		}
		return true, nil
	}
	r.pollPolicy(ctx, false)
	return r.next != nil, nil
}

// waitPoll sleeps until the next poll is due, or ctx is done.
func (r *runner) waitPoll(ctx context.Context) {
	d := r.opts.PolicyPoll - time.Since(r.lastPoll)
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// reload loads r.next in place of the running policy; nothing may be in
// flight. It measures verify + load + new engine into the summary. A version
// that fails is refused (logged with its error, which names the version and
// the file, and never retried); the old policy keeps running.
func (r *runner) reload(ctx context.Context) {
	ref := *r.next
	r.next = nil
	start := time.Now()
	pol, model, err := r.loadVersion(ctx, ref)
	if err != nil {
		if ctx.Err() != nil {
			return // stopping: neither loaded nor refused
		}
		r.refused[ref.Version] = true
		r.summary.VersionsRefused = append(r.summary.VersionsRefused, ref.Version)
		r.log.Error("refused policy version; the loaded one keeps running", "version", ref.Version, "dir", ref.Dir,
			"loaded", r.version, "error", err)
		return
	}
	r.decodeWall += r.eng.Stats().StepTime
	r.eng.Close()
	r.pol.Close()
	r.pol, r.model, r.version = pol, model, ref.Version
	r.eng = actor.NewEngine(pol, actor.EngineOptions{MaxBatch: r.job.Batch.Get()})
	elapsed := time.Since(start)
	r.summary.addReload(ref.Version, elapsed)
	r.log.Info("loaded policy version", "version", ref.Version, "dir", ref.Dir, "seconds", elapsed.Seconds())
}

// loadVersion verifies ref's folder against its manifest and loads it: its
// quantized form (policystore.QuantizedForm) when the running policy is
// quantized, else the version's own float32 folder.
func (r *runner) loadVersion(ctx context.Context, ref PolicyRef) (*actor.Policy, traj.ModelRef, error) {
	v, err := policystore.OpenVersion(ref.Dir)
	if err != nil {
		return nil, traj.ModelRef{}, err
	}
	if v.Number != ref.Version {
		return nil, traj.ModelRef{}, fmt.Errorf("%s is version %d, the source names it version %d", v.Dir, v.Number, ref.Version)
	}
	if err := policystore.Verify(ctx, v); err != nil {
		return nil, traj.ModelRef{}, err
	}
	// An actor keeps the form it started with: one sampling with a
	// quantized copy loads each version's quantized form.
	dir := v.Dir
	if q := r.pol.Quantization(); q != "" {
		dir = filepath.Join(v.Dir, policystore.QuantizedForm)
		if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
			return nil, traj.ModelRef{}, fmt.Errorf("version %d (%s) has no quantized form (%s/) and the running policy is quantized (%s): publish with a rollout quantization, or start the actor from a float32 model",
				v.Number, v.Dir, policystore.QuantizedForm, q)
		}
	}
	tokPath := filepath.Join(dir, "tokenizer.json")
	h, err := fileSHA256(tokPath)
	if err != nil {
		return nil, traj.ModelRef{}, err
	}
	if h != r.tokenizerHash {
		return nil, traj.ModelRef{}, fmt.Errorf("%s differs from the running policy's (%s): the prompt format and tool markup were tokenized with it; a new tokenizer needs a new run",
			tokPath, filepath.Join(r.job.Model.Get(), "tokenizer.json"))
	}
	pol, err := actor.Load(ctx, actor.LoadOptions{Dir: dir, Provider: r.job.Provider.Get(), IntraOpThreads: r.job.Threads.Get()})
	if err != nil {
		return nil, traj.ModelRef{}, err
	}
	model, err := modelRef(dir, pol)
	if err != nil {
		pol.Close()
		return nil, traj.ModelRef{}, err
	}
	return pol, model, nil
}

// fileSHA256 returns the hex SHA-256 of a file's contents.
func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
