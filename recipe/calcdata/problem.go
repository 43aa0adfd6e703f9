// Package calcdata generates the default policy's task: English arithmetic word
// problems with 1–3 operations and integral answers, and the completions the
// policy is trained on (tool calls in the bracket form `[CALC: <expr>]`, or a
// direct answer). Generation is deterministic: the same seed gives the same
// problems on every machine.
package calcdata

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Problem is one word problem with its answer.
type Problem struct {
	// Prompt is the question text the policy sees (inside the prompt template).
	Prompt string
	// Expr is the calculator expression that computes Answer, written as the
	// policy writes it inside `[CALC: ...]` (no spaces, parentheses where needed).
	Expr string
	// Answer is the exact integral answer.
	Answer int64
	// Ops is the number of arithmetic operations (1–3).
	Ops int
	// Easy marks problems drawn easy: small enough to answer without a tool.
	// Only one-operation templates can be drawn easy, so Easy implies Ops == 1;
	// the operands are 1–5, except an easy division's dividend, which is the
	// product of a divisor 2–5 and a quotient 1–5 (at most 25).
	Easy bool
	// Template names the template the problem came from.
	Template string
}

// Difficulty is the prompt's meta.difficulty: DifficultyEasy when the problem
// was drawn easy (Easy, which implies one operation), DifficultyHard otherwise.
// It labels the draw, not the numbers: a hard draw of a one-operation template
// can still come out small ("What is 3 plus 4?" from 1-digit operands 2–9).
func (p Problem) Difficulty() string {
	if p.Easy {
		return DifficultyEasy
	}
	return DifficultyHard
}

// AnswerText is the answer as the calculator prints it and the policy writes it.
func (p Problem) AnswerText() string { return strconv.FormatInt(p.Answer, 10) }

var names = []string{
	"Anna", "Ben", "Carla", "David", "Emma", "Farid", "Grace", "Hugo", "Ines", "Jack",
	"Kira", "Leo", "Maya", "Nina", "Omar", "Paul", "Rosa", "Sam", "Tara", "Victor",
}

var objects = []string{
	"apples", "pencils", "books", "marbles", "stickers", "cookies", "cards", "coins",
	"shells", "flowers", "stamps", "eggs", "balloons", "bottles", "candles", "toys",
}

var containers = []string{"boxes", "bags", "packs", "crates", "baskets", "jars"}

// numbers draws the operands of one problem.
type numbers struct {
	r    *rand.Rand
	easy bool
}

// any returns a number with 1–4 digits (the digit count uniform), or 1–5 when easy.
func (n numbers) any() int64 {
	if n.easy {
		return 1 + n.r.Int64N(5)
	}
	digits := 1 + n.r.IntN(4)
	lo := int64(1)
	for range digits - 1 {
		lo *= 10
	}
	if digits == 1 {
		return 2 + n.r.Int64N(8)
	}
	return lo + n.r.Int64N(9*lo)
}

// small returns a factor of 2–99 (2–5 when easy), used for multipliers and divisors.
func (n numbers) small() int64 {
	if n.easy {
		return 2 + n.r.Int64N(4)
	}
	if n.r.IntN(2) == 0 {
		return 2 + n.r.Int64N(8)
	}
	return 10 + n.r.Int64N(90)
}

// mid returns a factor of 2–999 (2–5 when easy).
func (n numbers) mid() int64 {
	if n.easy {
		return 2 + n.r.Int64N(4)
	}
	switch n.r.IntN(3) {
	case 0:
		return 2 + n.r.Int64N(8)
	case 1:
		return 10 + n.r.Int64N(90)
	default:
		return 100 + n.r.Int64N(900)
	}
}

// pair returns a ≥ b, both from any().
func (n numbers) pair() (int64, int64) {
	a, b := n.any(), n.any()
	if a < b {
		a, b = b, a
	}
	return a, b
}

// quotient returns (dividend, divisor, quotient) with an exact division.
func (n numbers) quotient() (int64, int64, int64) {
	d := n.small()
	q := n.mid()
	if n.easy {
		q = 1 + n.r.Int64N(5)
	}
	for d*q > 9999 {
		q /= 2
	}
	if q < 1 {
		q = 1
	}
	return d * q, d, q
}

// template builds one problem from the draw of names, objects and numbers.
type template struct {
	name string
	ops  int
	// easyOK marks templates that can be drawn as easy problems.
	easyOK bool
	build  func(w words, n numbers) (prompt, expr string, answer int64)
}

// words are the names and nouns of one problem.
type words struct {
	name, other, obj, box string
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

var templates = []template{
	{"add_have", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.any(), n.any()
		return fmt.Sprintf("%s has %d %s. %s buys %d more. How many %s does %s have now?", w.name, a, w.obj, w.name, b, w.obj, w.name),
			itoa(a) + "+" + itoa(b), a + b
	}},
	{"add_days", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.any(), n.any()
		return fmt.Sprintf("A shop sold %d %s on Monday and %d %s on Tuesday. How many %s did it sell in total?", a, w.obj, b, w.obj, w.obj),
			itoa(a) + "+" + itoa(b), a + b
	}},
	{"add_plain", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.any(), n.any()
		return fmt.Sprintf("What is %d plus %d?", a, b), itoa(a) + "+" + itoa(b), a + b
	}},
	{"sub_give", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.pair()
		return fmt.Sprintf("%s had %d %s and gave %d of them to %s. How many %s does %s have left?", w.name, a, w.obj, b, w.other, w.obj, w.name),
			itoa(a) + "-" + itoa(b), a - b
	}},
	{"sub_train", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.pair()
		return fmt.Sprintf("A train carries %d people. At the station %d people get off. How many people are left on the train?", a, b),
			itoa(a) + "-" + itoa(b), a - b
	}},
	{"sub_plain", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.pair()
		return fmt.Sprintf("What is %d minus %d?", a, b), itoa(a) + "-" + itoa(b), a - b
	}},
	{"mul_boxes", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		return fmt.Sprintf("There are %d %s with %d %s in each. How many %s are there in total?", a, w.box, b, w.obj, w.obj),
			itoa(a) + "*" + itoa(b), a * b
	}},
	{"mul_price", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		return fmt.Sprintf("One ticket costs %d dollars. How much do %d tickets cost?", a, b),
			itoa(a) + "*" + itoa(b), a * b
	}},
	{"mul_plain", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		return fmt.Sprintf("What is %d times %d?", a, b), itoa(a) + "*" + itoa(b), a * b
	}},
	{"div_share", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b, q := n.quotient()
		return fmt.Sprintf("%s shares %d %s equally among %d friends. How many %s does each friend get?", w.name, a, w.obj, b, w.obj),
			itoa(a) + "/" + itoa(b), q
	}},
	{"div_plain", 1, true, func(w words, n numbers) (string, string, int64) {
		a, b, q := n.quotient()
		return fmt.Sprintf("What is %d divided by %d?", a, b), itoa(a) + "/" + itoa(b), q
	}},
	{"add_sub", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b := n.any(), n.any()
		c := 1 + n.r.Int64N(a+b)
		return fmt.Sprintf("%s has %d %s, buys %d more and then gives away %d. How many %s does %s have now?", w.name, a, w.obj, b, c, w.obj, w.name),
			itoa(a) + "+" + itoa(b) + "-" + itoa(c), a + b - c
	}},
	{"mul_add", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b, c := n.small(), n.mid(), n.any()
		return fmt.Sprintf("%s buys %d %s of %d %s and already had %d. How many %s does %s have now?", w.name, a, w.box, b, w.obj, c, w.obj, w.name),
			itoa(a) + "*" + itoa(b) + "+" + itoa(c), a*b + c
	}},
	{"mul_sub", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		c := 1 + n.r.Int64N(a*b)
		return fmt.Sprintf("A farmer has %d rows of %d trees. %d trees are cut down. How many trees are left?", a, b, c),
			itoa(a) + "*" + itoa(b) + "-" + itoa(c), a*b - c
	}},
	{"sum_mul", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b, c := n.mid(), n.mid(), n.small()
		return fmt.Sprintf("Add %d and %d, then multiply the sum by %d.", a, b, c),
			"(" + itoa(a) + "+" + itoa(b) + ")*" + itoa(c), (a + b) * c
	}},
	{"div_add", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b, q := n.quotient()
		c := n.any()
		return fmt.Sprintf("%d %s are shared equally among %d children, and then each child gets %d more. How many %s does each child have?", a, w.obj, b, c, w.obj),
			itoa(a) + "/" + itoa(b) + "+" + itoa(c), q + c
	}},
	{"earn_spend", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		c := 1 + n.r.Int64N(a*b)
		return fmt.Sprintf("%s earns %d dollars a day for %d days and spends %d dollars. How many dollars are left?", w.name, a, b, c),
			itoa(a) + "*" + itoa(b) + "-" + itoa(c), a*b - c
	}},
	{"diff_mul", 2, false, func(w words, n numbers) (string, string, int64) {
		a, b := n.pair()
		if a == b {
			a++
		}
		c := n.small()
		return fmt.Sprintf("Subtract %d from %d, then multiply the result by %d.", b, a, c),
			"(" + itoa(a) + "-" + itoa(b) + ")*" + itoa(c), (a - b) * c
	}},
	{"add_mul_sub", 3, false, func(w words, n numbers) (string, string, int64) {
		a, b, c := n.any(), n.small(), n.mid()
		d := 1 + n.r.Int64N(a+b*c)
		return fmt.Sprintf("%s has %d %s and buys %d %s with %d %s in each, then gives away %d. How many %s does %s have now?", w.name, a, w.obj, b, w.box, c, w.obj, d, w.obj, w.name),
			itoa(a) + "+" + itoa(b) + "*" + itoa(c) + "-" + itoa(d), a + b*c - d
	}},
	{"prod_sub_add", 3, false, func(w words, n numbers) (string, string, int64) {
		a, b := n.mid(), n.small()
		c := 1 + n.r.Int64N(a*b)
		d := n.any()
		return fmt.Sprintf("Multiply %d by %d, subtract %d, then add %d.", a, b, c, d),
			itoa(a) + "*" + itoa(b) + "-" + itoa(c) + "+" + itoa(d), a*b - c + d
	}},
	{"sum_times_sub", 3, false, func(w words, n numbers) (string, string, int64) {
		a, b, c := n.mid(), n.mid(), n.small()
		d := 1 + n.r.Int64N((a+b)*c)
		return fmt.Sprintf("%s packs %d red %s and %d blue %s into each of %d %s and later removes %d. How many %s are in the %s now?", w.name, a, w.obj, b, w.obj, c, w.box, d, w.obj, w.box),
			"(" + itoa(a) + "+" + itoa(b) + ")*" + itoa(c) + "-" + itoa(d), (a+b)*c - d
	}},
	{"team_split", 3, false, func(w words, n numbers) (string, string, int64) {
		a, b, q := n.quotient()
		c := n.any()
		d := 1 + n.r.Int64N(q+c)
		return fmt.Sprintf("%d students are split into %d equal teams. Each team gets %d more students and then %d leave each team. How many students are in each team now?", a, b, c, d),
			itoa(a) + "/" + itoa(b) + "+" + itoa(c) + "-" + itoa(d), q + c - d
	}},
}

// easyTemplates indexes the templates that can be drawn easy.
var easyTemplates = func() []int {
	var idx []int
	for i, t := range templates {
		if t.easyOK {
			idx = append(idx, i)
		}
	}
	return idx
}()

// draw returns one problem from r; easy problems use only small operands.
func draw(r *rand.Rand, easyRate float64) Problem {
	easy := r.Float64() < easyRate
	var t template
	if easy {
		t = templates[easyTemplates[r.IntN(len(easyTemplates))]]
	} else {
		t = templates[r.IntN(len(templates))]
	}
	name := names[r.IntN(len(names))]
	other := names[r.IntN(len(names))]
	for other == name {
		other = names[r.IntN(len(names))]
	}
	w := words{name: name, other: other, obj: objects[r.IntN(len(objects))], box: containers[r.IntN(len(containers))]}
	prompt, expr, answer := t.build(w, numbers{r: r, easy: easy})
	return Problem{Prompt: prompt, Expr: expr, Answer: answer, Ops: t.ops, Easy: easy, Template: t.name}
}

// normalizePrompt is the key used to keep train and test prompts disjoint.
func normalizePrompt(s string) string { return strings.TrimSpace(s) }
