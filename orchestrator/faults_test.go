package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/reward"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/tools/calculator"
	"github.com/toolrl/toolrl/traj"
)

// faultyCalcTools writes models/calc's tools.yaml with a faults: block on
// its calculator entry (the file's last) and returns its path.
func faultyCalcTools(t *testing.T, faults string) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testsupport.RepoRoot(t), "models", "calc", "tools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "tools.yaml")
	doc := strings.TrimRight(string(src), "\n") + "\n    faults:\n" + faults
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRolloutWithFaultyCalculator runs the default policy with a calculator
// that fails a quarter of its calls each way (tool error, timeout, wrong
// result): every kind shows in the trajectories with the outcome class it
// stands for, the reward parts count it as what it is, the summary (and so
// /metrics) counts it under its class, and a rerun writes the same bytes
// while another seed draws other faults.
func TestRolloutWithFaultyCalculator(t *testing.T) {
	toolsFile := faultyCalcTools(t, "      error_rate: 0.25\n      timeout_rate: 0.25\n      implicit_rate: 0.25\n")
	dir := t.TempDir()
	run := func(name string, seed uint64) (*Summary, string) {
		out := filepath.Join(dir, name+".jsonl")
		job := calcJob(t, out)
		job.Limit, job.Seed, job.Tools = setting.Of(24), setting.Of(seed), setting.Of(toolsFile)
		sum, err := quietRun(t, context.Background(), job, RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sum, out
	}
	sum, outA := run("a", 3)
	_, outB := run("b", 3)
	_, outC := run("c", 4)
	a, _ := os.ReadFile(outA)
	b, _ := os.ReadFile(outB)
	if !bytes.Equal(a, b) {
		t.Fatal("two runs with seed 3 wrote different files")
	}

	w := reward.DefaultToolWeights()
	byFault := map[string]int{}
	byClass := map[string]int{}
	implicitWrong, implicitCopied := 0, 0
	misled, misledRight := 0, 0 // trajectories with an implicit fault, and those still right
	faultsOf := func(ts []traj.Trajectory) string {
		var b strings.Builder
		for _, tr := range ts {
			for _, s := range tr.Segments {
				if s.Result != nil {
					fmt.Fprintf(&b, "%s:%s ", tr.ID, s.Result.Fault)
				}
			}
		}
		return b.String()
	}
	ts := readTrajectories(t, outA)
	for _, tr := range ts {
		failed, succeeded, implicit := 0, 0, false
		for i, s := range tr.Segments {
			if s.Kind != traj.SegmentTool || s.Result == nil {
				continue
			}
			res := s.Result
			class := res.ErrorClass
			if res.OK {
				class = "ok"
			}
			byFault[res.Fault]++
			byClass[class]++
			var args struct {
				Expression string `json:"expression"`
			}
			_ = json.Unmarshal(s.Call.Arguments, &args)
			right, rightErr := calculator.Calculate(args.Expression, calculator.Limits{MaxLength: 256, MaxExponent: 1024, Decimals: 6})
			switch res.Fault {
			case "":
				if res.OK && (rightErr != nil || res.Content != right) {
					t.Errorf("%s: unfaulted result %q, the calculator gives %q", tr.ID, res.Content, right)
				}
			case tools.FaultError:
				if class != tools.ClassToolError || res.Content != "error: tool_error: calculator: service unavailable" {
					t.Errorf("%s: error fault %+v", tr.ID, res)
				}
			case tools.FaultTimeout:
				if class != tools.ClassTimeout || res.Content != "error: timeout: calculator did not finish within 3s" {
					t.Errorf("%s: timeout fault %+v", tr.ID, res)
				}
			case tools.FaultImplicit:
				if !res.OK || rightErr != nil || res.Content == right {
					t.Errorf("%s: implicit fault %+v, the calculator gives %q", tr.ID, res, right)
				}
				implicitWrong++
				implicit = true
				if i+1 < len(tr.Segments) && strings.Contains(tr.Segments[i+1].Text, res.Content) {
					implicitCopied++
				}
			default:
				t.Errorf("%s: unknown fault %q", tr.ID, res.Fault)
			}
			if res.OK {
				succeeded++
			} else if !tools.IsParseClass(class) && class != tools.ClassInvalidArgs {
				failed++
			}
		}
		if implicit {
			misled++
			if tr.Reward.Parts["outcome"] > 0 {
				misledRight++
			}
		}
		// The staged parts: an explicit error or timeout is a failed call,
		// an implicit failure a success, as the scoring counts them.
		r := reward.ComputeToolRewards(tr.Segments, w)
		if r.Failed != failed || r.Succeeded != succeeded {
			t.Errorf("%s: scored %d failed, %d succeeded; the results say %d, %d", tr.ID, r.Failed, r.Succeeded, failed, succeeded)
		}
		if got, want := tr.Reward.Parts[reward.PartToolFailure], w.ToolFailure*float64(failed); !approx(got, want) {
			t.Errorf("%s: tool_failure %v, want %v (%d failed calls)", tr.ID, got, want, failed)
		}
		if got, want := tr.Reward.Parts[reward.PartCallCost], w.CallCost*float64(r.Calls); !approx(got, want) {
			t.Errorf("%s: call_cost %v, want %v", tr.ID, got, want)
		}
	}
	t.Logf("%d trajectories; results by fault %v, by class %v; %d implicit results, %d copied into the next text; %d trajectories with one, %d of them right", len(ts), byFault, byClass, implicitWrong, implicitCopied, misled, misledRight)
	for _, k := range []string{"", tools.FaultError, tools.FaultTimeout, tools.FaultImplicit} {
		if byFault[k] == 0 {
			t.Errorf("no result with fault %q in %d trajectories", k, len(ts))
		}
	}
	// The summary (and the /metrics built from it) counts faulted calls
	// under their classes.
	for class, n := range byClass {
		if sum.Calls[class] != n {
			t.Errorf("summary counts %d %s calls, the file %d", sum.Calls[class], class, n)
		}
	}
	if faultsOf(ts) == faultsOf(readTrajectories(t, outC)) {
		t.Error("seeds 3 and 4 drew the same faults")
	}
}

// TestRolloutWithSlowCalculator: a latency at or past the calculator's
// timeout makes every call a timeout (fault latency), at once.
func TestRolloutWithSlowCalculator(t *testing.T) {
	out := filepath.Join(t.TempDir(), "slow.jsonl")
	job := calcJob(t, out)
	job.Limit, job.Tools = setting.Of(4), setting.Of(faultyCalcTools(t, "      latency: 1h\n"))
	sum, err := quietRun(t, context.Background(), job, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tr := range readTrajectories(t, out) {
		for _, s := range tr.Segments {
			if r := s.Result; r != nil && r.ErrorClass != tools.ClassInvalidArgs {
				n++
				if r.ErrorClass != tools.ClassTimeout || r.Fault != tools.FaultLatency {
					t.Errorf("%s: %+v, want a timeout of fault latency", tr.ID, r)
				}
			}
		}
	}
	if n == 0 || sum.Calls[tools.ClassTimeout] != n || sum.Wall.Seconds() > 60 {
		t.Errorf("%d results, summary %v timeouts, wall %s", n, sum.Calls, sum.Wall)
	}
}

func approx(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }
