package calculator

import (
	"errors"
	"math/big"
	"strings"
	"testing"
)

func TestCalculate(t *testing.T) {
	cases := []struct{ expr, want string }{
		{"12 * 34", "408"},
		{"123 * 456", "56088"},
		{"1 + 2 * 3", "7"},
		{"(1 + 2) * 3", "9"},
		{"10 - 4 - 3", "3"},
		{"100 / 10 / 5", "2"},
		{"2 ^ 3 ^ 2", "512"},
		{"-2 ^ 2", "-4"},
		{"(-2) ^ 2", "4"},
		{"2 ^ -2", "0.25"},
		{"2 ** 10", "1024"},
		{"1 / 3", "0.333333333333"},
		{"2 / 3", "0.666666666667"},
		{"-2 / 3", "-0.666666666667"},
		{"1 / 4", "0.25"},
		{"7 % 3", "1"},
		{"-7 % 3", "2"},
		{"7 % -3", "-2"},
		{"7.5 % 2", "1.5"},
		{"0.1 + 0.2", "0.3"},
		{".5 * 4", "2"},
		{"3 × 4 ÷ 6", "2"},
		{"--3", "3"},
		{"+3", "3"},
		{"2^100", "1267650600228229401496703205376"},
		{"99999999999999999999 * 99999999999999999999", "9999999999999999999800000000000000000001"},
		{"1 / 3 * 3", "1"},
	}
	for _, c := range cases {
		got, err := Calculate(c.expr, Limits{})
		if err != nil {
			t.Errorf("Calculate(%q): %v", c.expr, err)
			continue
		}
		if got != c.want {
			t.Errorf("Calculate(%q) = %q, want %q", c.expr, got, c.want)
		}
	}
}

func TestCalculateErrors(t *testing.T) {
	cases := []struct {
		expr string
		want error
		msg  string
	}{
		{"", ErrSyntax, "expected a number"},
		{"1 +", ErrSyntax, "end of expression"},
		{"(1 + 2", ErrSyntax, `expected ")"`},
		{"1 + 2)", ErrSyntax, `unexpected ")"`},
		{"1e5", ErrSyntax, `character "e"`},
		{"1..2", ErrSyntax, "malformed number"},
		{"1 / 0", ErrDivByZero, "offset 2"},
		{"1 % 0", ErrDivByZero, "modulo"},
		{"0 ^ -1", ErrDivByZero, "negative power"},
		{"2 ^ 0.5", ErrDomain, "not an integer"},
		{"2 ^ 100000", ErrLimit, "exceeds 4096"},
		{"10 ^ 4000 * 10 ^ 4000 * 10 ^ 4000 * 10^4000 * 10^4000 * 10^4000", ErrLimit, "bits"},
		{"123456789 ^ 4096", ErrLimit, "bits"},
		{strings.Repeat("(", 100) + "1" + strings.Repeat(")", 100), ErrLimit, "nesting deeper than 64"},
		{strings.Repeat("-", 100) + "1", ErrLimit, "nesting"},
		{strings.Repeat("1+", 600) + "1", ErrLimit, "1201 bytes"},
	}
	for _, c := range cases {
		_, err := Eval(c.expr, Limits{})
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("Eval(%q) error = %v, want %v containing %q", c.expr, err, c.want, c.msg)
		}
	}
}

func TestFormatDecimals(t *testing.T) {
	v := big.NewRat(1, 7)
	if got := Format(v, Limits{Decimals: 3}); got != "0.143" {
		t.Errorf("Format(1/7, 3 decimals) = %q", got)
	}
	if got := Format(big.NewRat(-1, 1000000000000000), Limits{}); got != "0" {
		t.Errorf("Format(-1e-15) = %q, want 0", got)
	}
}

// FuzzEval checks that no input crashes Eval or runs past its limits, and
// that results are consistent: the result of a successful expression equals
// the result of the same expression wrapped in parentheses and added to 0.
func FuzzEval(f *testing.F) {
	for _, s := range []string{"12 * 34", "2^3^2", "-(1/3) % 2", "((1))", "9^9^9", "1/0", "3.5.5", "×÷−", "2**-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		v, err := Eval(expr, Limits{})
		if err != nil {
			if !errors.Is(err, ErrSyntax) && !errors.Is(err, ErrLimit) && !errors.Is(err, ErrDivByZero) && !errors.Is(err, ErrDomain) {
				t.Fatalf("Eval(%q): unclassified error %v", expr, err)
			}
			return
		}
		if bits := v.Num().BitLen() + v.Denom().BitLen(); bits > 65536 {
			t.Fatalf("Eval(%q) produced %d bits", expr, bits)
		}
		w, err := Eval("0+("+expr+")", Limits{MaxLength: len(expr) + 4, MaxDepth: 65})
		if err != nil {
			t.Fatalf("Eval(0+(%q)) failed after Eval succeeded: %v", expr, err)
		}
		if v.Cmp(w) != 0 {
			t.Fatalf("Eval(%q) = %s but 0+(...) = %s", expr, v.RatString(), w.RatString())
		}
		_ = Format(v, Limits{})
	})
}
