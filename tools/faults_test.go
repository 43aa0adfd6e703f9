package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/tools/search"
	"github.com/toolrl/toolrl/traj"
)

// faultyCalc is a registry file with the calculator and the given faults
// block (indented under the entry).
func faultyCalc(faults string) string {
	return "tools:\n  - type: calculator\n    bracket: CALC\n    timeout: 3s\n    faults:\n" + faults
}

func TestParseFaults(t *testing.T) {
	reg, err := ParseRegistry(context.Background(), []byte(faultyCalc(
		"      error_rate: 0.1\n      timeout_rate: 0.2\n      implicit_rate: 0.3\n      latency: {dist: lognormal, median: 200ms, p99: 2s}\n")), ".")
	if err != nil {
		t.Fatal(err)
	}
	_, s, _ := reg.Lookup("calculator")
	want := Faults{ErrorRate: 0.1, TimeoutRate: 0.2, ImplicitRate: 0.3,
		Latency: Latency{Dist: LatencyLognormal, Median: 200 * time.Millisecond, P99: 2 * time.Second}}
	if s.Faults != want {
		t.Errorf("faults %+v, want %+v", s.Faults, want)
	}
	for _, c := range []struct{ latency, want string }{
		{"150ms", "fixed 150ms"},
		{"{dist: fixed, median: 50ms}", "fixed 50ms"},
	} {
		reg, err := ParseRegistry(context.Background(), []byte(faultyCalc("      latency: "+c.latency+"\n")), ".")
		if err != nil {
			t.Fatalf("latency %s: %v", c.latency, err)
		}
		_, s, _ := reg.Lookup("calculator")
		if got := s.Faults.Latency.Dist + " " + s.Faults.Latency.Median.String(); got != c.want {
			t.Errorf("latency %s: %s, want %s", c.latency, got, c.want)
		}
	}
	// No block, an empty block and all zeros are off.
	for _, doc := range []string{
		"tools:\n  - type: calculator\n",
		faultyCalc("      {}\n"),
		faultyCalc("      error_rate: 0\n      timeout_rate: 0\n      implicit_rate: 0\n"),
	} {
		reg, err := ParseRegistry(context.Background(), []byte(doc), ".")
		if err != nil {
			t.Fatal(err)
		}
		if _, s, _ := reg.Lookup("calculator"); s.Faults.Active() {
			t.Errorf("%q: faults active: %+v", doc, s.Faults)
		}
	}
}

func TestParseFaultsRefusals(t *testing.T) {
	dir := t.TempDir()
	corpus := filepath.Join(dir, "c.jsonl")
	if err := os.WriteFile(corpus, []byte(`{"id":"a","text":"alpha"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ doc, want string }{
		{faultyCalc("      error_rate: 1.5\n"), "tools[0] (line 2): calculator: faults.error_rate (line 6): 1.5 is not a probability in [0, 1]"},
		{faultyCalc("      timeout_rate: -0.1\n"), "faults.timeout_rate (line 6): -0.1 is not a probability in [0, 1]"},
		{faultyCalc("      implicit_rate: .nan\n"), "faults.implicit_rate (line 6): NaN is not a probability"},
		{faultyCalc("      error_rate: 0.5\n      timeout_rate: 0.4\n      implicit_rate: 0.2\n"), "calculator: faults (line 6): error_rate + timeout_rate + implicit_rate = 1.1, want ≤ 1"},
		{faultyCalc("      error_rate: x\n"), "cannot unmarshal"},
		{faultyCalc("      eror_rate: 0.1\n"), "field eror_rate not found"},
		{faultyCalc("      latency: fast\n"), `faults.latency (line 6): "fast" is not a positive duration`},
		{faultyCalc("      latency: -2s\n"), `faults.latency (line 6): "-2s" is not a positive duration`},
		{faultyCalc("      latency: {dist: lognormal, median: 2s, p99: 1s}\n"), "faults.latency (line 6): lognormal wants 0 < median < p99"},
		{faultyCalc("      latency: {dist: lognormal, median: 2s}\n"), "lognormal wants 0 < median < p99"},
		{faultyCalc("      latency: {dist: pareto, median: 2s}\n"), `unknown dist "pareto"`},
		{faultyCalc("      latency: {median: 2s}\n"), "dist is required"},
		{faultyCalc("      latency: {dist: fixed, median: 2s, p99: 3s}\n"), "a fixed latency takes median (the delay) and no p99"},
		{faultyCalc("      latency: {dist: fixed, median: 1s, mean: 3s}\n"), "field mean not found"},
		{faultyCalc("      latency: [1s]\n"), "want a duration (fixed) or"},
		{"defaults:\n  faults: {error_rate: 0.1}\ntools:\n  - type: calculator\n", "defaults: faults (line 2): faults are set per tool"},
		{"tools:\n  - type: python\n    faults: {implicit_rate: 0.1}\n", `tools[0] (line 2): python: faults.implicit_rate (line 3): tool "python" cannot make a plausible wrong result`},
		{"tools:\n  - type: http\n    function: {name: h, parameters: {type: object}}\n    settings: {url: 'http://127.0.0.1:1/'}\n    faults:\n      implicit_rate: 0.1\n", `http: faults.implicit_rate (line 6): tool "h" cannot make a plausible wrong result`},
	} {
		_, err := ParseRegistry(context.Background(), []byte(c.doc), dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.doc, err, c.want)
		}
	}
	// LoadRegistry names the file.
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte(faultyCalc("      error_rate: 2\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadRegistry(context.Background(), path); err == nil || !strings.Contains(err.Error(), "tool registry "+path+": tools[0] (line 2): calculator: faults.error_rate (line 6)") {
		t.Errorf("LoadRegistry: %v", err)
	}
	// The search tool takes implicit faults; so does a renamed calculator.
	for _, doc := range []string{
		"tools:\n  - type: search\n    settings: {corpus: c.jsonl}\n    faults: {implicit_rate: 0.5}\n",
		"tools:\n  - type: calculator\n    function: {name: calc}\n    faults: {implicit_rate: 0.5}\n",
	} {
		if _, err := ParseRegistry(context.Background(), []byte(doc), dir); err != nil {
			t.Errorf("%q: %v", doc, err)
		}
	}
	// Register checks programmatic settings too.
	for _, c := range []struct {
		f    Faults
		want string
	}{
		{Faults{ErrorRate: 1.01}, "error_rate 1.01 is not a probability"},
		{Faults{ErrorRate: 0.6, ImplicitRate: 0.6}, "= 1.2, want ≤ 1"},
		{Faults{ImplicitRate: 0.1}, `register tool "f": faults: implicit_rate: the tool cannot make a plausible wrong result`},
		{Faults{Latency: Latency{Dist: LatencyFixed}}, "a fixed latency must be positive"},
		{Faults{Latency: Latency{Dist: "uniform", Median: 1}}, `unknown dist "uniform"`},
	} {
		err := NewRegistry().Register(fn("f", nil), Settings{Faults: c.f})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}

// faultRun runs n calls of an episode with seed through the calculator with
// faults f and returns each call's recorded fault and class.
func faultRun(t *testing.T, f Faults, seed uint64, n int) []string {
	t.Helper()
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{Faults: f, Timeout: time.Second}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	ep := ex.NewSeededEpisode(seed)
	out := make([]string, n)
	for i := range out {
		_, res := ep.Execute(context.Background(), i, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"12*34"}`)})
		out[i] = res.Fault + "/" + res.ErrorClass + "/" + res.Content
	}
	return out
}

func TestFaultsDeterministic(t *testing.T) {
	f := Faults{ErrorRate: 0.2, TimeoutRate: 0.2, ImplicitRate: 0.2}
	a, b := faultRun(t, f, 7, 200), faultRun(t, f, 7, 200)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatal("the same seed gave different faults")
	}
	c := faultRun(t, f, 8, 200)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == len(a) {
		t.Fatal("seeds 7 and 8 gave the same faults")
	}
	counts := map[string]int{}
	for _, s := range a {
		fault, _, _ := strings.Cut(s, "/")
		counts[fault]++
	}
	t.Logf("seed 7, 200 calls: %v; seed 8 agrees on %d", counts, same)
	// 200 draws at 0.2 each: every kind shows, none is far off its rate.
	for _, k := range []string{"", FaultError, FaultTimeout, FaultImplicit} {
		want := 40.0
		if k == "" {
			want = 80
		}
		if d := math.Abs(float64(counts[k]) - want); d > 4*math.Sqrt(want) {
			t.Errorf("fault %q: %d of 200, want about %v", k, counts[k], want)
		}
	}
	// Each kind is what it says.
	for i, s := range a {
		parts := strings.SplitN(s, "/", 3)
		switch parts[0] {
		case "":
			if parts[1] != "" || parts[2] != "408" {
				t.Errorf("call %d: no fault but %q", i, s)
			}
		case FaultError:
			if parts[1] != ClassToolError || parts[2] != "error: tool_error: calculator: service unavailable" {
				t.Errorf("call %d: %q", i, s)
			}
		case FaultTimeout:
			if parts[1] != ClassTimeout || parts[2] != "error: timeout: calculator did not finish within 1s" {
				t.Errorf("call %d: %q", i, s)
			}
		case FaultImplicit:
			if parts[1] != "" || parts[2] == "408" || len(parts[2]) != 3 || parts[2] < "405" || parts[2] > "411" {
				t.Errorf("call %d: %q, want a number 405..411 other than 408", i, s)
			}
		}
	}
	// Off: nothing changes, whatever the seed.
	for _, s := range faultRun(t, Faults{}, 7, 20) {
		if s != "//408" {
			t.Fatalf("no faults: %q", s)
		}
	}
}

func TestFaultTimeoutIsATimeout(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{Faults: Faults{TimeoutRate: 1}, Timeout: time.Hour}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	start := time.Now()
	_, res := ex.NewSeededEpisode(1).Execute(context.Background(), 0, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)})
	if time.Since(start) > time.Second {
		t.Errorf("an injected timeout of 1h took %s", time.Since(start))
	}
	if res.OK || res.ErrorClass != ClassTimeout || res.Fault != FaultTimeout || res.LatencyMS != 3600e3 {
		t.Errorf("result %+v", res)
	}
	st := ex.Stats()
	if st.Timeouts != 1 || st.Calls != 1 || st.InFlight != 0 || st.Latency["calculator"].Count != 1 || st.Latency["calculator"].Seconds != 3600 {
		t.Errorf("stats %+v", st)
	}
	// Executor.Execute alone injects none.
	if res := ex.Execute(context.Background(), Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)}); !res.OK || res.Fault != "" {
		t.Errorf("Execute: %+v", res)
	}
	// The slots came back: a concurrency-1 tool timed out by a fault runs again.
	reg = newReg(t, reg1{NewCalculator(calcLimits()), Settings{Faults: Faults{TimeoutRate: 0.5}, Concurrency: 1}})
	ex = NewExecutor(reg, ExecutorOptions{Logger: quiet, GlobalLimit: 1})
	ep := ex.NewSeededEpisode(3)
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, res := ep.Execute(ctx, i, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1+1"}`)})
		cancel()
		if res.ErrorClass == ClassCanceled {
			t.Fatalf("call %d waited for a slot: %+v", i, res)
		}
	}
}

func TestFaultLatency(t *testing.T) {
	// A fixed latency below the timeout delays the call; one at or past it
	// is a timeout at once (fault latency).
	reg := newReg(t,
		reg1{fn("slow", func(ctx context.Context, args json.RawMessage) (Result, error) { return Result{Content: "ok"}, nil }),
			Settings{Faults: Faults{Latency: Latency{Dist: LatencyFixed, Median: 30 * time.Millisecond}}, Timeout: time.Second}},
		reg1{fn("slower", func(ctx context.Context, args json.RawMessage) (Result, error) { return Result{Content: "ok"}, nil }),
			Settings{Faults: Faults{Latency: Latency{Dist: LatencyFixed, Median: time.Hour}}, Timeout: time.Second}},
	)
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	ep := ex.NewSeededEpisode(1)
	_, res := ep.Execute(context.Background(), 0, call("slow"))
	if !res.OK || res.Fault != "" || res.LatencyMS < 30 {
		t.Errorf("slow: %+v", res)
	}
	start := time.Now()
	_, res = ep.Execute(context.Background(), 1, call("slower"))
	if res.ErrorClass != ClassTimeout || res.Fault != FaultLatency || res.LatencyMS != 1000 || time.Since(start) > 500*time.Millisecond {
		t.Errorf("slower: %+v after %s", res, time.Since(start))
	}
	// The lognormal's quantiles are its parameters'.
	f := Faults{Latency: Latency{Dist: LatencyLognormal, Median: 200 * time.Millisecond, P99: 2 * time.Second}}
	var ds []time.Duration
	for i := range 20000 {
		ds = append(ds, f.draw(callKey{seed: 5, index: i}).delay)
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	med, p99 := ds[len(ds)/2], ds[len(ds)*99/100]
	if math.Abs(med.Seconds()/0.2-1) > 0.05 || math.Abs(p99.Seconds()/2-1) > 0.15 {
		t.Errorf("lognormal median %s p99 %s, want about 200ms and 2s", med, p99)
	}
}

func TestNudgeNumber(t *testing.T) {
	for _, c := range []struct {
		in   string
		d    int64
		want string
	}{
		{"408", 3, "411"}, {"408", -1, "407"}, {"0", -2, "-2"}, {"-1", 1, "0"}, {"-1", 3, "2"},
		{"2.75", -3, "2.72"}, {"2.5", -5, "2"}, {"0.001", -2, "-0.001"}, {"-0.5", 1, "-0.4"},
		{"0.333333", 1, "0.333334"}, {"1267650600228229401496703205376", 1, "1267650600228229401496703205377"},
	} {
		if got, ok := nudgeNumber(c.in, c.d); !ok || got != c.want {
			t.Errorf("nudge %s by %d: %q %v, want %q", c.in, c.d, got, ok, c.want)
		}
	}
	for _, bad := range []string{"", "-", "1.", ".5", "1e3", "x", "1/3"} {
		if got, ok := nudgeNumber(bad, 1); ok {
			t.Errorf("nudge %q: %q, want refused", bad, got)
		}
	}
}

func TestImplicitSearch(t *testing.T) {
	var docs []search.Doc
	for i := range 20 {
		docs = append(docs, search.Doc{ID: fmt.Sprint("d", i), Title: fmt.Sprint("T", i), Text: fmt.Sprintf("passage %d about topic%d", i, i)})
	}
	tool := &searchTool{ix: search.Build(docs, search.Options{})}
	reg := newReg(t, reg1{tool, Settings{Faults: Faults{ImplicitRate: 1}}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	right := tool.ix.Format(tool.ix.Search("topic3", 0))
	for seed := range uint64(20) {
		_, res := ex.NewSeededEpisode(seed).Execute(context.Background(), 0, Call{Name: "search", Arguments: json.RawMessage(`{"query":"topic3"}`)})
		if !res.OK || res.Fault != FaultImplicit || res.Content == right || strings.Contains(res.Content, "(d3)") || !strings.HasPrefix(res.Content, "[1] T") {
			t.Errorf("seed %d: %+v (right: %q)", seed, res, right)
		}
	}
	// A corpus with nothing else to give keeps the right result, no fault.
	one := &searchTool{ix: search.Build(docs[:1], search.Options{})}
	ex = NewExecutor(newReg(t, reg1{one, Settings{Faults: Faults{ImplicitRate: 1}}}), ExecutorOptions{Logger: quiet})
	if _, res := ex.NewSeededEpisode(0).Execute(context.Background(), 0, Call{Name: "search", Arguments: json.RawMessage(`{"query":"topic0"}`)}); !res.OK || res.Fault != "" || !strings.Contains(res.Content, "(d0)") {
		t.Errorf("one-document corpus: %+v", res)
	}
}

func TestImplicitKeepsFailures(t *testing.T) {
	// An implicit fault on a call that fails leaves the failure as it is.
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{Faults: Faults{ImplicitRate: 1}}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	_, res := ex.NewSeededEpisode(0).Execute(context.Background(), 0, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"1/0"}`)})
	if res.OK || res.ErrorClass != ClassToolError || res.Fault != "" {
		t.Errorf("1/0 with an implicit fault: %+v", res)
	}
}

func TestFaultsTurnIndices(t *testing.T) {
	// ExecuteTurn draws by call index in the trajectory, as Execute does:
	// the same calls give the same faults whichever way they ran.
	f := Faults{ErrorRate: 0.3, ImplicitRate: 0.3}
	reg := newReg(t, reg1{NewCalculator(calcLimits()), Settings{Faults: f}})
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	c := Call{Name: "calculator", Arguments: json.RawMessage(`{"expression":"12*34"}`)}
	one := ex.NewSeededEpisode(11)
	var want []traj.ToolResult
	for i := range 6 {
		_, r := one.Execute(context.Background(), i/3, c)
		want = append(want, r)
	}
	turns := ex.NewSeededEpisode(11)
	_, r0, _ := turns.ExecuteTurn(context.Background(), 0, []Call{c, c, c})
	_, r1, _ := turns.ExecuteTurn(context.Background(), 1, []Call{c, c, c})
	got := append(r0, r1...)
	for i := range want {
		got[i].LatencyMS, want[i].LatencyMS = 0, 0
		if got[i] != want[i] {
			t.Errorf("call %d: turn %+v, one by one %+v", i, got[i], want[i])
		}
	}
}

// TestFaultsDocExample parses the faults example of docs/tools.md.
func TestFaultsDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "tools.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "## Faults")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/tools.md has no faults example")
	}
	reg, err := ParseRegistry(context.Background(), []byte(block), ".")
	if err != nil {
		t.Fatalf("the example does not load: %v\n%s", err, block)
	}
	if _, s, _ := reg.Lookup("calculator"); s.Faults != (Faults{ErrorRate: 0.05, TimeoutRate: 0.05, ImplicitRate: 0.05,
		Latency: Latency{Dist: LatencyLognormal, Median: 200 * time.Millisecond, P99: 2 * time.Second}}) {
		t.Errorf("faults %+v", s.Faults)
	}
}
