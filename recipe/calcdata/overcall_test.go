package calcdata

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/tools"
)

func TestErrorExamples(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	hard := Problem{Prompt: "What is 12 plus 34?", Expr: "12+34", Answer: 46, Ops: 1}
	ex := Complete(r, hard, Mix{ErrorRate: 1, AnswerAfterError: 1})
	if len(ex.Segments) != 5 || ex.Direct || !ex.Correct {
		t.Fatalf("hard error example %+v, want call, error, call, result, answer", ex)
	}
	want := " [CALC: 12+34] = error: "
	if !strings.HasPrefix(ex.Text(), want) || !strings.HasSuffix(ex.Text(), " [CALC: 12+34] = 46. The answer is 46.") {
		t.Fatalf("hard error example %q", ex.Text())
	}
	for i, tool := range []bool{false, true, false, true, false} {
		if ex.Segments[i].Tool != tool {
			t.Fatalf("segment %d Tool = %v: %+v", i, !tool, ex.Segments)
		}
	}
	easy := Problem{Prompt: "What is 2 plus 3?", Expr: "2+3", Answer: 5, Ops: 1, Easy: true}
	ex = Complete(r, easy, Mix{ErrorRate: 1, AnswerAfterError: 1})
	if len(ex.Segments) != 3 || !ex.Segments[1].Tool || !strings.HasSuffix(ex.Text(), ". The answer is 5.") {
		t.Fatalf("easy error example %q (%+v), want call, error, answer", ex.Text(), ex.Segments)
	}
	ex = Complete(r, easy, Mix{ErrorRate: 1, AnswerAfterError: 0})
	if len(ex.Segments) != 5 {
		t.Fatalf("easy error example without AnswerAfterError %q, want a retry", ex.Text())
	}
}

// TestOvercallMix checks the shares of OvercallMix's training stream and that
// it keeps out the held-out prompts.
func TestOvercallMix(t *testing.T) {
	const n = 20000
	exs := TrainExamples(n, OvercallMix(), HeldOut)
	test := map[string]bool{}
	for _, p := range TestProblems(HeldOut) {
		test[normalizePrompt(p.Prompt)] = true
	}
	var easy, easyDirect, tool, failed int
	for _, ex := range exs {
		if test[normalizePrompt(ex.Prompt)] {
			t.Fatalf("held-out prompt %q in the overcall training stream", ex.Prompt)
		}
		if ex.Easy {
			easy++
			if ex.Direct {
				easyDirect++
			}
		}
		if !ex.Direct {
			tool++
			if len(ex.Segments) > 1 && strings.HasPrefix(ex.Segments[1].Text, " = error: ") {
				failed++
			}
		}
	}
	m := OvercallMix()
	// Skipping the held-out prompts drops about one easy draw in nine (the
	// easy prompt space is small): 0.535 easy at EasyRate 0.6.
	if f := float64(easy) / n; f < m.EasyRate-0.1 || f > m.EasyRate {
		t.Errorf("easy share %.3f, want %.2f less the held-out prompts", f, m.EasyRate)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"direct share of easy", float64(easyDirect) / float64(easy), m.DirectEasy},
		{"failed share of tool examples", float64(failed) / float64(tool), m.ErrorRate},
	} {
		if d := c.got - c.want; d < -0.02 || d > 0.02 {
			t.Errorf("%s %.3f, want %.2f ± 0.02", c.name, c.got, c.want)
		}
	}
	if o := OvercallPolicyOptions(); o.Mix != m || o.Examples != DefaultPolicyOptions().Examples {
		t.Fatalf("OvercallPolicyOptions %+v", o)
	}
}

// TestErrorTextsAreTools checks ErrorTexts against what a faulty calculator
// (tools' faults) injects.
func TestErrorTextsAreTools(t *testing.T) {
	for _, c := range []struct{ key, want string }{
		{"error_rate", ErrorTexts[0]},
		{"timeout_rate", ErrorTexts[1]},
	} {
		files, err := FolderFiles(nil, 639, "<|endoftext|>")
		if err != nil {
			t.Fatal(err)
		}
		y := strings.Replace(string(files.Extra["tools.yaml"]), "    settings:\n", "    faults:\n      "+c.key+": 1\n    settings:\n", 1)
		path := filepath.Join(t.TempDir(), "tools.yaml")
		if err := os.WriteFile(path, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		reg, err := tools.LoadRegistry(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := tools.NewParser("bracket", reg, tools.ParserOptions{})
		if err != nil {
			t.Fatal(err)
		}
		res := p.Add(CallText("2+3"), false)
		if len(res.Calls) != 1 || !res.Calls[0].OK() {
			t.Fatalf("bracket call not parsed: %+v", res)
		}
		_, out := tools.NewExecutor(reg, tools.ExecutorOptions{}).NewSeededEpisode(1).Execute(context.Background(), 0, res.Calls[0])
		reg.Close()
		if got := tools.BracketInjection(out); got != InjectedText(c.want) {
			t.Errorf("%s: injection %q, want %q", c.key, got, InjectedText(c.want))
		}
	}
}

// ParseMix names the two mixes toolrl model train --mix takes.
func TestParseMix(t *testing.T) {
	for name, want := range map[string]Mix{"default": DefaultMix(), "": DefaultMix(), "overcall": OvercallMix()} {
		if got, err := ParseMix(name); err != nil || got != want {
			t.Errorf("%q: %+v, %v", name, got, err)
		}
	}
	if _, err := ParseMix("sparse"); err == nil || !strings.Contains(err.Error(), `"sparse", want default or overcall`) {
		t.Errorf("unknown mix: %v", err)
	}
}
