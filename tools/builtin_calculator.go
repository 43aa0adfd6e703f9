package tools

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/toolrl/toolrl/tools/calculator"
)

// CalculatorTimeout is the calculator's per-call timeout when its registry
// entry and the file's defaults set none: the design's 3 seconds. The
// calculator's own limits (calculator.Limits) keep every expression far
// below it; a call that reaches it still ends as a timeout.
const CalculatorTimeout = 3 * time.Second

// calculatorTool adapts package calculator: {"expression": "12 * 34"} → "408".
type calculatorTool struct{ limits calculator.Limits }

// NewCalculator returns the calculator tool with the given limits (zero
// fields: calculator's defaults).
func NewCalculator(limits calculator.Limits) Tool { return &calculatorTool{limits: limits} }

func (b builder) calculator() ([]Tool, error) {
	var lim calculator.Limits
	if err := b.decodeSettings(&lim); err != nil {
		return nil, err
	}
	if err := b.positiveSettings(calculatorPositive); err != nil {
		return nil, err
	}
	return []Tool{NewCalculator(lim)}, nil
}

func (c *calculatorTool) Name() string { return "calculator" }

// DefaultTimeout is the timeout Register gives the calculator when its
// Settings set none.
func (c *calculatorTool) DefaultTimeout() time.Duration { return CalculatorTimeout }

func (c *calculatorTool) Description() string {
	return "Evaluates an arithmetic expression exactly: + - * / % ^ and parentheses over integers and decimals."
}

func (c *calculatorTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"the expression, e.g. 12 * (34 + 5)"}},"required":["expression"],"additionalProperties":false}`)
}

// Execute evaluates the expression. An argument the calculator cannot use
// (not an arithmetic expression, e.g. "five" or "12 apples", or past a
// limit) is invalid_args, an invalid call; arithmetic that has no result
// (division by zero, a fractional exponent) is tool_error.
func (c *calculatorTool) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	var a struct {
		Expression string `json:"expression"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return Result{}, InvalidArgs(err)
	}
	out, err := calculator.Calculate(a.Expression, c.limits)
	if err != nil {
		if errors.Is(err, calculator.ErrSyntax) || errors.Is(err, calculator.ErrLimit) {
			return Result{}, InvalidArgs(err)
		}
		return Result{}, err
	}
	return Result{Content: out}, nil
}
