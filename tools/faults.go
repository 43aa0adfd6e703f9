package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/toolrl/toolrl/internal/strictyaml"
	"github.com/toolrl/toolrl/traj"
)

// Fault names, as traj.ToolResult.Fault records them: the fault a call was
// made to suffer (Settings.Faults), when it had an effect.
const (
	// FaultError: the call failed as tool_error without running.
	FaultError = "error"
	// FaultTimeout: the call timed out (class timeout) without running.
	FaultTimeout = "timeout"
	// FaultImplicit: the call ran and its result was replaced by a
	// plausible wrong one (class ok).
	FaultImplicit = "implicit"
	// FaultLatency: the injected latency reached the call's timeout, so the
	// call timed out (class timeout) without running.
	FaultLatency = "latency"
)

// Faults are the failures a tool's calls are made to suffer, for training
// against flaky tools (a registry entry's faults: block, docs/tools.md).
// Each call of an Episode draws at most one of the three failures, with
// the given probabilities, and a latency, from a random stream fixed by
// the episode's seed and the call's index in the trajectory: a rerun
// injects the same faults. The zero value injects none. Executor.Execute
// outside an Episode injects none either (a call has no identity there).
type Faults struct {
	// ErrorRate is the probability that the call fails as tool_error
	// without running ("<tool>: service unavailable"), in [0, 1].
	ErrorRate float64
	// TimeoutRate is the probability that the call times out: a timeout
	// result at the tool's configured timeout (as a real timeout reads,
	// LatencyMS the timeout), returned at once without running the tool,
	// counted in Stats().Timeouts. In [0, 1].
	TimeoutRate float64
	// ImplicitRate is the probability that a call that succeeds returns a
	// plausible wrong result instead (calculator: one digit changed;
	// search: other passages of its corpus), still class ok. In [0, 1];
	// only for tools that can make a wrong result (Register refuses it
	// for the others).
	ImplicitRate float64
	// Latency delays each call before it runs.
	Latency Latency
}

// Latency is an injected delay's distribution. The zero value is none.
type Latency struct {
	// Dist is "" (no delay), LatencyFixed or LatencyLognormal.
	Dist string
	// Median is the fixed delay, or the lognormal's median (> 0).
	Median time.Duration
	// P99 is the lognormal's 99th percentile (> Median); unused when fixed.
	P99 time.Duration
}

// Latency distributions.
const (
	LatencyFixed     = "fixed"
	LatencyLognormal = "lognormal"
)

// z99 is the standard normal's 99th percentile.
const z99 = 2.3263478740408408

// Active reports whether f injects anything.
func (f Faults) Active() bool {
	return f.ErrorRate > 0 || f.TimeoutRate > 0 || f.ImplicitRate > 0 || f.Latency.Dist != ""
}

// check refuses rates outside [0, 1], a sum above 1 and a malformed latency.
func (f Faults) check() error {
	for _, r := range []struct {
		key string
		v   float64
	}{{"error_rate", f.ErrorRate}, {"timeout_rate", f.TimeoutRate}, {"implicit_rate", f.ImplicitRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return fmt.Errorf("faults: %s %v is not a probability in [0, 1]", r.key, r.v)
		}
	}
	if s := f.ErrorRate + f.TimeoutRate + f.ImplicitRate; s > 1+1e-12 {
		return fmt.Errorf("faults: error_rate + timeout_rate + implicit_rate = %v, want ≤ 1", s)
	}
	switch f.Latency.Dist {
	case "":
	case LatencyFixed:
		if f.Latency.Median <= 0 {
			return errors.New("faults: latency: a fixed latency must be positive")
		}
	case LatencyLognormal:
		if f.Latency.Median <= 0 || f.Latency.P99 <= f.Latency.Median {
			return fmt.Errorf("faults: latency: lognormal wants 0 < median < p99, got median %s, p99 %s", f.Latency.Median, f.Latency.P99)
		}
	default:
		return fmt.Errorf("faults: latency: unknown dist %q (want fixed or lognormal)", f.Latency.Dist)
	}
	return nil
}

// wrongResulter is a tool that can make a plausible wrong result for
// ImplicitRate: from the right result and the call's arguments, with draws
// from rng only (so the same stream gives the same wrong result). ok is
// false when it cannot make one for this result (the call then keeps its
// right result and records no fault).
type wrongResulter interface {
	wrongResult(args json.RawMessage, right Result, rng *faultRNG) (wrong Result, ok bool)
}

// supportsImplicit reports whether t (through a registry file's function
// override) can make wrong results.
func supportsImplicit(t Tool) bool {
	_, ok := unwrapTool(t).(wrongResulter)
	return ok
}

func unwrapTool(t Tool) Tool {
	if o, ok := t.(*overridden); ok {
		return o.Tool
	}
	return t
}

// callKey is a call's identity for fault injection: the episode's seed
// (the trajectory's sampling seed) and the call's index among the calls the
// trajectory made, from 0.
type callKey struct {
	seed  uint64
	index int
}

// faultDraw is what a call was drawn to suffer.
type faultDraw struct {
	kind  string        // "", FaultError, FaultTimeout or FaultImplicit
	delay time.Duration // the injected latency
	rng   *faultRNG     // the rest of the call's stream, for a wrong result
}

// draw draws a call's fault: one uniform picks the fault (error, then
// timeout, then implicit, by cumulative rate), a second pair the latency;
// the same key always gives the same draw.
func (f Faults) draw(k callKey) faultDraw {
	rng := newFaultRNG(k)
	u := rng.uniform()
	var d faultDraw
	switch {
	case u < f.ErrorRate:
		d.kind = FaultError
	case u < f.ErrorRate+f.TimeoutRate:
		d.kind = FaultTimeout
	case u < f.ErrorRate+f.TimeoutRate+f.ImplicitRate:
		d.kind = FaultImplicit
	}
	z := rng.normal()
	switch f.Latency.Dist {
	case LatencyFixed:
		d.delay = f.Latency.Median
	case LatencyLognormal:
		// ln X ~ N(ln median, σ²) with σ = ln(p99/median)/z99.
		sigma := math.Log(float64(f.Latency.P99)/float64(f.Latency.Median)) / z99
		d.delay = time.Duration(float64(f.Latency.Median) * math.Exp(sigma*z))
	}
	d.rng = rng
	return d
}

// faultRNG is a call's random stream: PCG-DXSM (math/rand/v2, whose output
// is fixed by its specification) seeded from the key through SplitMix64,
// on a stream apart from the sampler's (actor's seed is the same number).
// The uniform and normal draws are written out here, so that they do not
// depend on math/rand's helpers.
type faultRNG struct{ pcg rand.PCG }

func newFaultRNG(k callKey) *faultRNG {
	const tag = 0x746f6f6c726c6661 // "toolrlfa": a stream apart from the sampler's
	r := &faultRNG{}
	r.pcg.Seed(splitMix64(k.seed^tag), splitMix64(uint64(k.index)))
	return r
}

// splitMix64 is SplitMix64's output function applied to x + golden gamma
// (Steele et al., "Fast splittable pseudorandom number generators", 2014).
func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// uniform returns a float64 in [0, 1) with 53 random bits.
func (r *faultRNG) uniform() float64 { return float64(r.pcg.Uint64()>>11) * (1.0 / (1 << 53)) }

// intn returns an int in [0, n), n > 0.
func (r *faultRNG) intn(n int) int { return min(int(r.uniform()*float64(n)), n-1) }

// normal returns a standard normal draw (Box–Muller, two uniforms).
func (r *faultRNG) normal() float64 {
	u1 := 1 - r.uniform() // (0, 1]
	u2 := r.uniform()
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
}

// faultsDoc is a registry entry's faults: block.
type faultsDoc struct {
	ErrorRate    float64   `yaml:"error_rate"`
	TimeoutRate  float64   `yaml:"timeout_rate"`
	ImplicitRate float64   `yaml:"implicit_rate"`
	Latency      yaml.Node `yaml:"latency"`
}

type latencyDoc struct {
	Dist   string `yaml:"dist"`
	Median string `yaml:"median"`
	P99    string `yaml:"p99"`
}

// parseFaults reads a faults: block (nil: none). The error names the key
// and its line.
func parseFaults(doc *faultsDoc, node *yaml.Node) (Faults, error) {
	if doc == nil {
		return Faults{}, nil
	}
	f := Faults{ErrorRate: doc.ErrorRate, TimeoutRate: doc.TimeoutRate, ImplicitRate: doc.ImplicitRate}
	for _, r := range []struct {
		key string
		v   float64
	}{{"error_rate", f.ErrorRate}, {"timeout_rate", f.TimeoutRate}, {"implicit_rate", f.ImplicitRate}} {
		if !(r.v >= 0 && r.v <= 1) {
			return Faults{}, fmt.Errorf("faults.%s (line %d): %v is not a probability in [0, 1]", r.key, keyLine(node, r.key), r.v)
		}
	}
	if s := f.ErrorRate + f.TimeoutRate + f.ImplicitRate; s > 1+1e-12 {
		return Faults{}, fmt.Errorf("faults (line %d): error_rate + timeout_rate + implicit_rate = %v, want ≤ 1", node.Line, s)
	}
	lat, err := parseLatency(&doc.Latency)
	if err != nil {
		return Faults{}, fmt.Errorf("faults.latency (line %d): %w", doc.Latency.Line, err)
	}
	f.Latency = lat
	return f, f.check()
}

// parseLatency reads latency: a duration (fixed) or {dist: fixed, median: D}
// or {dist: lognormal, median: D, p99: D}.
func parseLatency(n *yaml.Node) (Latency, error) {
	switch n.Kind {
	case 0:
		return Latency{}, nil
	case yaml.ScalarNode:
		d, err := parseDuration(n.Value)
		if err != nil || d == 0 {
			return Latency{}, fmt.Errorf("%q is not a positive duration like 200ms (or give {dist: lognormal, median: 200ms, p99: 2s})", n.Value)
		}
		return Latency{Dist: LatencyFixed, Median: d}, nil
	case yaml.MappingNode:
	default:
		return Latency{}, errors.New("want a duration (fixed) or {dist: lognormal, median: 200ms, p99: 2s}")
	}
	var ld latencyDoc
	raw, err := yaml.Marshal(n)
	if err != nil {
		return Latency{}, err
	}
	if err := strictyaml.Decode(raw, &ld); err != nil {
		return Latency{}, err
	}
	median, err := parseDuration(ld.Median)
	if err != nil {
		return Latency{}, fmt.Errorf("median: %w", err)
	}
	p99, err := parseDuration(ld.P99)
	if err != nil {
		return Latency{}, fmt.Errorf("p99: %w", err)
	}
	switch ld.Dist {
	case LatencyFixed:
		if median == 0 || p99 != 0 {
			return Latency{}, errors.New("a fixed latency takes median (the delay) and no p99")
		}
	case LatencyLognormal:
		if median == 0 || p99 <= median {
			return Latency{}, fmt.Errorf("lognormal wants 0 < median < p99, got median %q, p99 %q", ld.Median, ld.P99)
		}
	case "":
		return Latency{}, errors.New("dist is required (fixed or lognormal)")
	default:
		return Latency{}, fmt.Errorf("unknown dist %q (want fixed or lognormal)", ld.Dist)
	}
	return Latency{Dist: ld.Dist, Median: median, P99: p99}, nil
}

// keyLine is the line of key in the mapping m (m's own line when absent).
func keyLine(m *yaml.Node, key string) int {
	if m == nil {
		return 0
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i].Line
		}
	}
	return m.Line
}

// mappingValue is the value node of key in the mapping m, or nil.
func mappingValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// injectedTimeout ends a call drawn to time out (FaultTimeout, or a latency
// that reaches the timeout) as a real timeout ends, without waiting for
// it: the slots it holds are freed, it counts in Stats().Timeouts, its
// LatencyMS and latency histogram entry are the timeout.
func (e *Executor) injectedTimeout(name string, timeout time.Duration, d faultDraw) traj.ToolResult {
	e.inFlight.Add(-1)
	e.global.Release(1)
	if sem := e.perTool[name]; sem != nil {
		sem.Release(1)
	}
	e.timeouts.Add(1)
	out := Failure(ClassTimeout, timeoutDetail(name, timeout))
	out.Fault = FaultTimeout
	if d.kind != FaultTimeout {
		out.Fault = FaultLatency
	}
	out.LatencyMS = float64(timeout.Microseconds()) / 1000
	if h := e.latency[name]; h != nil {
		h.observe(timeout)
	}
	return out
}

// runFaulty runs a call with its drawn fault: the latency first (bounded
// by ctx), then an error instead of the call, or the call with its result
// made wrong.
func (e *Executor) runFaulty(ctx context.Context, name string, t Tool, args json.RawMessage, d faultDraw) outcome {
	if d.delay > 0 {
		timer := time.NewTimer(d.delay)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return outcome{err: ctx.Err()}
		}
	}
	if d.kind == FaultError {
		return outcome{err: Errorf(ClassToolError, "%s: service unavailable", name), fault: FaultError}
	}
	o := e.run(ctx, t, args)
	if d.kind == FaultImplicit && o.err == nil {
		if w, ok := unwrapTool(t).(wrongResulter); ok {
			if wrong, ok := w.wrongResult(args, o.res, d.rng); ok {
				o.res, o.fault = wrong, FaultImplicit
			}
		}
	}
	return o
}
