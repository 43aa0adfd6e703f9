// Package calculator evaluates arithmetic expressions exactly, over
// arbitrary-precision rationals (math/big.Rat): + - * / % ^ and parentheses.
// Inputs that would cost unbounded time or memory (huge exponents, deep
// nesting, long inputs, results with too many bits) are rejected with an
// error that says which limit was hit.
package calculator

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// Limits bound the work one expression may cause. The zero value of a field
// means its default.
type Limits struct {
	// MaxLength is the longest accepted expression in bytes (default 1024).
	MaxLength int `yaml:"max_length" json:"max_length"`
	// MaxDepth is the deepest nesting of parentheses and unary signs (default 64).
	MaxDepth int `yaml:"max_depth" json:"max_depth"`
	// MaxExponent is the largest |n| in x^n (default 4096).
	MaxExponent int `yaml:"max_exponent" json:"max_exponent"`
	// MaxBits bounds the size of every intermediate value: the bit lengths of
	// numerator plus denominator (default 65536, about 19,700 decimal digits).
	MaxBits int `yaml:"max_bits" json:"max_bits"`
	// Decimals is the number of fractional digits a non-terminating result is
	// rounded to (default 12).
	Decimals int `yaml:"decimals" json:"decimals"`
}

func (l Limits) withDefaults() Limits {
	if l.MaxLength <= 0 {
		l.MaxLength = 1024
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = 64
	}
	if l.MaxExponent <= 0 {
		l.MaxExponent = 4096
	}
	if l.MaxBits <= 0 {
		l.MaxBits = 65536
	}
	if l.Decimals <= 0 {
		l.Decimals = 12
	}
	return l
}

// Errors returned by Eval, wrapped with the position and detail. Syntax and
// limit errors are the caller's input; ErrDivByZero is arithmetic.
var (
	ErrSyntax    = errors.New("syntax error")
	ErrLimit     = errors.New("limit exceeded")
	ErrDivByZero = errors.New("division by zero")
	ErrDomain    = errors.New("undefined result")
)

// Eval evaluates expr exactly. Operators, loosest first: + and - (binary);
// * / and %; unary + and -; ^ (right-associative, integer exponents only, so
// -2^2 = -4 and 2^3^2 = 512). "**" is accepted for ^, "×" for * and "÷" for /.
// Numbers are decimal literals (12, 3.25, .5); % is the floored modulo
// a - b*floor(a/b), defined for rationals. Eval is safe for concurrent use.
func Eval(expr string, lim Limits) (*big.Rat, error) {
	lim = lim.withDefaults()
	if len(expr) > lim.MaxLength {
		return nil, fmt.Errorf("%w: expression is %d bytes, the limit is %d", ErrLimit, len(expr), lim.MaxLength)
	}
	p := &parser{src: expr, lim: lim}
	p.next()
	v, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tokEOF {
		return nil, p.errorf("unexpected %s", p.tok)
	}
	return v, nil
}

// Format prints v as an integer when it is integral; otherwise as an exact
// decimal when its expansion terminates within lim.Decimals fractional digits;
// otherwise rounded to lim.Decimals fractional digits (half away from zero)
// with trailing zeros removed. So 1/4 prints 0.25 and 1/3 prints
// 0.333333333333.
func Format(v *big.Rat, lim Limits) string {
	lim = lim.withDefaults()
	if v.IsInt() {
		return v.Num().String()
	}
	s := v.FloatString(lim.Decimals)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(s, "0")
		s = strings.TrimSuffix(s, ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}

// Calculate is Eval followed by Format.
func Calculate(expr string, lim Limits) (string, error) {
	v, err := Eval(expr, lim)
	if err != nil {
		return "", err
	}
	return Format(v, lim), nil
}
