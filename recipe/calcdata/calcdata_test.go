package calcdata

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/tools/calculator"
)

// eval evaluates the generator's expressions (+ - * / and parentheses, integers)
// independently of the generator's own arithmetic.
func eval(t *testing.T, s string) int64 {
	t.Helper()
	pos := 0
	var expr, term, factor func() int64
	factor = func() int64 {
		if s[pos] == '(' {
			pos++
			v := expr()
			if pos >= len(s) || s[pos] != ')' {
				t.Fatalf("missing ) in %q", s)
			}
			pos++
			return v
		}
		start := pos
		for pos < len(s) && s[pos] >= '0' && s[pos] <= '9' {
			pos++
		}
		v, err := strconv.ParseInt(s[start:pos], 10, 64)
		if err != nil {
			t.Fatalf("bad number in %q at %d", s, start)
		}
		return v
	}
	term = func() int64 {
		v := factor()
		for pos < len(s) && (s[pos] == '*' || s[pos] == '/') {
			op := s[pos]
			pos++
			w := factor()
			if op == '*' {
				v *= w
			} else {
				if w == 0 || v%w != 0 {
					t.Fatalf("inexact division in %q", s)
				}
				v /= w
			}
		}
		return v
	}
	expr = func() int64 {
		v := term()
		for pos < len(s) && (s[pos] == '+' || s[pos] == '-') {
			op := s[pos]
			pos++
			w := term()
			if op == '+' {
				v += w
			} else {
				v -= w
			}
		}
		return v
	}
	v := expr()
	if pos != len(s) {
		t.Fatalf("trailing text in %q", s)
	}
	return v
}

func TestExpressionsMatchAnswers(t *testing.T) {
	r := newRand(7)
	for i := range 20000 {
		p := draw(r, 0.3)
		if got := eval(t, p.Expr); got != p.Answer {
			t.Fatalf("problem %d (%s): %s = %d, answer %d", i, p.Template, p.Expr, got, p.Answer)
		}
		if p.Answer < 0 {
			t.Fatalf("problem %d (%s): negative answer %d", i, p.Template, p.Answer)
		}
		if strings.Contains(p.Prompt, "]") {
			t.Fatalf("prompt contains ]: %q", p.Prompt)
		}
	}
}

func TestDeterministicAndDisjoint(t *testing.T) {
	a := TrainExamples(2000, DefaultMix(), 512)
	b := TrainExamples(2000, DefaultMix(), 512)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different training examples")
	}
	test := map[string]bool{}
	for _, p := range TestProblems(512) {
		test[p.Prompt] = true
	}
	if len(test) != 512 {
		t.Fatalf("test prompts not distinct: %d", len(test))
	}
	direct, easy := 0, 0
	for _, ex := range a {
		if test[ex.Prompt] {
			t.Fatalf("training prompt is a test prompt: %q", ex.Prompt)
		}
		if ex.Direct {
			direct++
		}
		if ex.Easy {
			easy++
		}
		if ex.Direct && ex.Easy && !ex.Correct {
			t.Fatalf("easy direct answer is wrong: %+v", ex)
		}
	}
	if f := float64(direct) / float64(len(a)); f < 0.15 || f > 0.35 {
		t.Fatalf("direct fraction %.3f outside 0.15–0.35", f)
	}
	if f := float64(easy) / float64(len(a)); f < 0.2 || f > 0.4 {
		t.Fatalf("easy fraction %.3f outside 0.2–0.4", f)
	}
}

func TestCompletionLayout(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	p := Problem{Prompt: "What is 12 plus 34?", Expr: "12+34", Answer: 46, Ops: 1}
	ex := Complete(r, p, Mix{DirectHard: 0})
	want := " [CALC: 12+34] = 46. The answer is 46."
	if ex.Text() != want {
		t.Fatalf("completion %q, want %q", ex.Text(), want)
	}
	if !ex.Segments[1].Tool || ex.Segments[0].Tool || ex.Segments[2].Tool {
		t.Fatalf("segment kinds wrong: %+v", ex.Segments)
	}
	if got := Render("Hi?"); got != "Question: Hi?\nAnswer:" {
		t.Fatalf("Render = %q", got)
	}
}

func TestPromptsRoundTrip(t *testing.T) {
	ps := TestProblems(10)
	var buf bytes.Buffer
	if err := WritePrompts(&buf, SplitTest, ps); err != nil {
		t.Fatal(err)
	}
	recs, err := readPrompts(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 10 || recs[3].Prompt != ps[3].Prompt || recs[3].Answer != ps[3].AnswerText() || recs[3].ID != "calc-0003" {
		t.Fatalf("round trip mismatch: %+v", recs[3])
	}
}

func TestCalculatorAgrees(t *testing.T) {
	r := newRand(11)
	for i := range 5000 {
		p := draw(r, 0.3)
		got, err := calculator.Calculate(p.Expr, calculator.Limits{})
		if err != nil || got != p.AnswerText() {
			t.Fatalf("problem %d: calculator(%q) = %q, %v; want %s", i, p.Expr, got, err, p.AnswerText())
		}
	}
}
