package tools

import (
	"context"
	"errors"
	"testing"

	"github.com/toolrl/toolrl/tools/calculator"
	"github.com/toolrl/toolrl/traj"
)

// ParseText finds every call of a whole turn, also one that ends the text,
// runs each with an executor and asks inject for the text after it; without
// an executor it only reports the calls.
func TestParseText(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calculator.Limits{}), Settings{Bracket: "CALC"}})
	ex := NewExecutor(reg, ExecutorOptions{})
	inject := func(r traj.ToolResult) (string, error) { return FormInjection(FormBracket, r), nil }
	var found []FoundCall
	collect := func(c FoundCall) error { found = append(found, c); return nil }
	text := "So [CALC: 12 * 34] and [CALC: 2^10]"
	if err := ParseText(context.Background(), NewBracketParser(reg, ParserOptions{}), text, ex, inject, collect); err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].Inject != " = 408" || found[1].Inject != " = 1024" || found[1].Result == nil || !found[1].Result.OK {
		t.Fatalf("found %+v", found)
	}
	found = nil
	if err := ParseText(context.Background(), NewBracketParser(reg, ParserOptions{}), text, nil, inject, collect); err != nil {
		t.Fatal(err)
	}
	if len(found) != 2 || found[0].Result != nil || found[0].Inject != "" || found[0].Call.Name != "calculator" {
		t.Fatalf("without an executor: %+v", found)
	}
	failed := errors.New("no format")
	err := ParseText(context.Background(), NewBracketParser(reg, ParserOptions{}), text, ex,
		func(traj.ToolResult) (string, error) { return "", failed }, collect)
	if !errors.Is(err, failed) || err.Error() != "inject the result of calculator: no format" {
		t.Fatalf("inject error: %v", err)
	}
}

func TestExecuteTextRefusesBadJSON(t *testing.T) {
	reg := newReg(t, reg1{NewCalculator(calculator.Limits{}), Settings{}})
	ex := NewExecutor(reg, ExecutorOptions{})
	if r := ex.ExecuteText(context.Background(), "calculator", `{bad`); r.OK || r.ErrorClass != ClassBadJSON {
		t.Fatalf("bad JSON: %+v", r)
	}
	if r := ex.ExecuteText(context.Background(), "calculator", `{"expression": "6*7"}`); !r.OK || r.Content != "42" {
		t.Fatalf("6*7: %+v", r)
	}
}

func TestFormInjection(t *testing.T) {
	r := traj.ToolResult{OK: true, Content: "7"}
	for form, want := range map[string]string{FormBracket: BracketInjection(r), FormHermes: HermesInjection(r), FormLlama3JSON: "7", FormMistral: "7"} {
		if got := FormInjection(form, r); got != want {
			t.Errorf("%s: %q, want %q", form, got, want)
		}
	}
}
