package calculator

import (
	"fmt"
	"math/big"
	"strings"
	"unicode/utf8"
)

type tokKind int

const (
	tokEOF tokKind = iota
	tokNum
	tokOp // + - * / % ^
	tokLParen
	tokRParen
	tokBad
)

type token struct {
	kind tokKind
	op   byte   // for tokOp
	text string // literal text, for numbers and errors
	pos  int    // byte offset in the source
}

func (t token) String() string {
	switch t.kind {
	case tokEOF:
		return "end of expression"
	case tokNum:
		return fmt.Sprintf("number %q", t.text)
	case tokOp:
		return fmt.Sprintf("operator %q", string(t.op))
	case tokLParen:
		return `"("`
	case tokRParen:
		return `")"`
	}
	return fmt.Sprintf("character %q", t.text)
}

// parser is a recursive-descent parser that evaluates as it parses.
type parser struct {
	src   string
	pos   int
	tok   token
	lim   Limits
	depth int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", ErrSyntax, p.tok.pos, fmt.Sprintf(format, args...))
}

func (p *parser) next() {
	s := p.src
	for p.pos < len(s) && (s[p.pos] == ' ' || s[p.pos] == '\t' || s[p.pos] == '\n' || s[p.pos] == '\r') {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(s) {
		p.tok = token{kind: tokEOF, pos: start}
		return
	}
	c := s[p.pos]
	switch {
	case c >= '0' && c <= '9' || c == '.':
		for p.pos < len(s) && (s[p.pos] >= '0' && s[p.pos] <= '9' || s[p.pos] == '.') {
			p.pos++
		}
		p.tok = token{kind: tokNum, text: s[start:p.pos], pos: start}
	case c == '*' && p.pos+1 < len(s) && s[p.pos+1] == '*':
		p.pos += 2
		p.tok = token{kind: tokOp, op: '^', pos: start}
	case strings.IndexByte("+-*/%^", c) >= 0:
		p.pos++
		p.tok = token{kind: tokOp, op: c, pos: start}
	case c == '(':
		p.pos++
		p.tok = token{kind: tokLParen, pos: start}
	case c == ')':
		p.pos++
		p.tok = token{kind: tokRParen, pos: start}
	default:
		r, size := utf8.DecodeRuneInString(s[p.pos:])
		p.pos += size
		switch r {
		case '×':
			p.tok = token{kind: tokOp, op: '*', pos: start}
		case '÷':
			p.tok = token{kind: tokOp, op: '/', pos: start}
		case '−': // U+2212 minus sign
			p.tok = token{kind: tokOp, op: '-', pos: start}
		default:
			p.tok = token{kind: tokBad, text: string(r), pos: start}
		}
	}
}

func precedence(op byte) int {
	switch op {
	case '+', '-':
		return 1
	case '*', '/', '%':
		return 2
	}
	return 0 // '^' is handled in power
}

// expr parses binary operators of precedence > minPrec... by precedence
// climbing over the two left-associative levels.
func (p *parser) expr(minPrec int) (*big.Rat, error) {
	lhs, err := p.unary()
	if err != nil {
		return nil, err
	}
	for p.tok.kind == tokOp {
		op := p.tok.op
		prec := precedence(op)
		if prec == 0 || prec <= minPrec {
			break
		}
		opPos := p.tok.pos
		p.next()
		rhs, err := p.expr(prec)
		if err != nil {
			return nil, err
		}
		lhs, err = p.apply(op, lhs, rhs, opPos)
		if err != nil {
			return nil, err
		}
	}
	return lhs, nil
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > p.lim.MaxDepth {
		return fmt.Errorf("%w: nesting deeper than %d at offset %d", ErrLimit, p.lim.MaxDepth, p.tok.pos)
	}
	return nil
}

// unary := ('+'|'-') unary | power
func (p *parser) unary() (*big.Rat, error) {
	if p.tok.kind == tokOp && (p.tok.op == '-' || p.tok.op == '+') {
		if err := p.enter(); err != nil {
			return nil, err
		}
		neg := p.tok.op == '-'
		p.next()
		v, err := p.unary()
		p.depth--
		if err != nil {
			return nil, err
		}
		if neg {
			v.Neg(v)
		}
		return v, nil
	}
	return p.power()
}

// power := primary ['^' unary]   (right-associative through unary → power)
func (p *parser) power() (*big.Rat, error) {
	base, err := p.primary()
	if err != nil {
		return nil, err
	}
	if p.tok.kind == tokOp && p.tok.op == '^' {
		opPos := p.tok.pos
		p.next()
		if err := p.enter(); err != nil {
			return nil, err
		}
		exp, err := p.unary()
		p.depth--
		if err != nil {
			return nil, err
		}
		return p.pow(base, exp, opPos)
	}
	return base, nil
}

// primary := number | '(' expr ')'
func (p *parser) primary() (*big.Rat, error) {
	switch p.tok.kind {
	case tokNum:
		v, err := p.number(p.tok)
		if err != nil {
			return nil, err
		}
		p.next()
		return v, nil
	case tokLParen:
		if err := p.enter(); err != nil {
			return nil, err
		}
		p.next()
		v, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if p.tok.kind != tokRParen {
			return nil, p.errorf("expected \")\", found %s", p.tok)
		}
		p.depth--
		p.next()
		return v, nil
	}
	return nil, p.errorf("expected a number or \"(\", found %s", p.tok)
}

func (p *parser) number(t token) (*big.Rat, error) {
	txt := t.text
	if strings.Count(txt, ".") > 1 || txt == "." {
		return nil, fmt.Errorf("%w at offset %d: malformed number %q", ErrSyntax, t.pos, txt)
	}
	// Each decimal digit costs log2(10) bits.
	if digits := len(txt); digits*10/3 > p.lim.MaxBits {
		return nil, fmt.Errorf("%w: number at offset %d has %d digits", ErrLimit, t.pos, digits)
	}
	v, ok := new(big.Rat).SetString(txt)
	if !ok {
		return nil, fmt.Errorf("%w at offset %d: malformed number %q", ErrSyntax, t.pos, txt)
	}
	return v, nil
}

func (p *parser) checkSize(v *big.Rat, pos int) error {
	if bits := v.Num().BitLen() + v.Denom().BitLen(); bits > p.lim.MaxBits {
		return fmt.Errorf("%w: value at offset %d needs %d bits, the limit is %d", ErrLimit, pos, bits, p.lim.MaxBits)
	}
	return nil
}

func (p *parser) apply(op byte, a, b *big.Rat, pos int) (*big.Rat, error) {
	// Bound the cost before multiplying: the product's size is about the sum.
	if op == '*' || op == '/' || op == '%' {
		bits := a.Num().BitLen() + a.Denom().BitLen() + b.Num().BitLen() + b.Denom().BitLen()
		if bits > 2*p.lim.MaxBits {
			return nil, fmt.Errorf("%w: operands at offset %d need %d bits", ErrLimit, pos, bits)
		}
	}
	r := new(big.Rat)
	switch op {
	case '+':
		r.Add(a, b)
	case '-':
		r.Sub(a, b)
	case '*':
		r.Mul(a, b)
	case '/':
		if b.Sign() == 0 {
			return nil, fmt.Errorf("%w at offset %d", ErrDivByZero, pos)
		}
		r.Quo(a, b)
	case '%':
		if b.Sign() == 0 {
			return nil, fmt.Errorf("%w at offset %d (modulo)", ErrDivByZero, pos)
		}
		// a mod b = a - b*floor(a/b): the result has the sign of b.
		q := new(big.Rat).Quo(a, b)
		fl := floor(q)
		r.Sub(a, new(big.Rat).Mul(b, new(big.Rat).SetInt(fl)))
	}
	if err := p.checkSize(r, pos); err != nil {
		return nil, err
	}
	return r, nil
}

func floor(q *big.Rat) *big.Int {
	// big.Int.Div is Euclidean division; with a positive denominator it floors.
	return new(big.Int).Div(q.Num(), q.Denom())
}

func (p *parser) pow(base, exp *big.Rat, pos int) (*big.Rat, error) {
	if !exp.IsInt() {
		return nil, fmt.Errorf("%w at offset %d: exponent %s is not an integer", ErrDomain, pos, exp.RatString())
	}
	e := exp.Num()
	if e.CmpAbs(big.NewInt(int64(p.lim.MaxExponent))) > 0 {
		return nil, fmt.Errorf("%w: exponent %s at offset %d exceeds %d", ErrLimit, e, pos, p.lim.MaxExponent)
	}
	n := e.Int64()
	neg := n < 0
	if neg {
		n = -n
	}
	if base.Sign() == 0 {
		if neg {
			return nil, fmt.Errorf("%w at offset %d: 0 raised to a negative power", ErrDivByZero, pos)
		}
		if n == 0 {
			return new(big.Rat).SetInt64(1), nil
		}
		return new(big.Rat), nil
	}
	// |base|^n needs about n*bits(base) bits: refuse before computing.
	num, den := base.Num(), base.Denom()
	bits := int64(num.BitLen()-1+den.BitLen()-1) * n
	if bits > int64(p.lim.MaxBits) {
		return nil, fmt.Errorf("%w: power at offset %d would need about %d bits, the limit is %d", ErrLimit, pos, bits, p.lim.MaxBits)
	}
	bn := big.NewInt(n)
	rn := new(big.Int).Exp(num, bn, nil)
	rd := new(big.Int).Exp(den, bn, nil)
	if neg {
		rn, rd = rd, rn
	}
	r := new(big.Rat).SetFrac(rn, rd)
	if err := p.checkSize(r, pos); err != nil {
		return nil, err
	}
	return r, nil
}
