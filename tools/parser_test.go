package tools

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
)

// feed runs text through p in the given chunks, passing Rest back in as a
// caller that goes on after a call would, and returns the content and calls.
func feed(p Parser, chunks []string) (string, []Call) {
	var content strings.Builder
	var calls []Call
	for i, ch := range chunks {
		done := i == len(chunks)-1
		for {
			r := p.Add(ch, done)
			content.WriteString(r.Content)
			calls = append(calls, r.Calls...)
			if len(r.Calls) > 1 {
				panic("more than one call per Add")
			}
			if r.Rest == "" {
				if len(r.Calls) == 1 && done {
					// The call ended the last chunk exactly: flush.
					r2 := p.Add("", true)
					content.WriteString(r2.Content)
					calls = append(calls, r2.Calls...)
				}
				break
			}
			ch = r.Rest
		}
	}
	if len(chunks) == 0 {
		r := p.Add("", true)
		content.WriteString(r.Content)
		calls = append(calls, r.Calls...)
	}
	return content.String(), calls
}

// splits returns text whole, byte by byte, and cut at random points.
func splits(text string, rng *rand.Rand) [][]string {
	out := [][]string{{text}}
	var bytes []string
	for i := 0; i < len(text); i++ {
		bytes = append(bytes, text[i:i+1])
	}
	out = append(out, bytes)
	for k := 0; k < 5; k++ {
		var chunks []string
		rest := text
		for len(rest) > 0 {
			n := 1 + rng.IntN(6)
			n = min(n, len(rest))
			chunks = append(chunks, rest[:n])
			rest = rest[n:]
		}
		out = append(out, chunks)
	}
	return out
}

type wantCall struct{ name, args, raw, class string }

func checkParse(t *testing.T, newParser func() Parser, text, wantContent string, want []wantCall) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, chunks := range splits(text, rng) {
		content, calls := feed(newParser(), chunks)
		if content != wantContent {
			t.Errorf("%q in %d chunks: content %q, want %q", text, len(chunks), content, wantContent)
		}
		if len(calls) != len(want) {
			t.Errorf("%q in %d chunks: %d calls %+v, want %d", text, len(chunks), len(calls), calls, len(want))
			continue
		}
		for i, w := range want {
			c := calls[i]
			if c.Name != w.name || string(c.Arguments) != w.args || c.Raw != w.raw || c.ErrorClass != w.class {
				t.Errorf("%q in %d chunks: call %d = {%q %s %q %q (%s)}, want %+v", text, len(chunks), i, c.Name, c.Arguments, c.Raw, c.ErrorClass, c.Error, w)
			}
		}
	}
}

func TestBracketParser(t *testing.T) {
	reg := loadCalc(t)
	np := func() Parser { return NewBracketParser(reg, ParserOptions{MaxCallBytes: 40}) }
	longCalc := "[CALC: " + strings.Repeat("1+", 30) + "1]"
	cases := []struct {
		text, content string
		calls         []wantCall
	}{
		{"no call here", "no call here", nil},
		{"So [CALC: 12 * 34] and", "So  and", []wantCall{{"calculator", `{"expression":"12 * 34"}`, "[CALC: 12 * 34]", ""}}},
		{"[CALC:1+2][CALC: 3]", "", []wantCall{
			{"calculator", `{"expression":"1+2"}`, "[CALC:1+2]", ""},
			{"calculator", `{"expression":"3"}`, "[CALC: 3]", ""}}},
		{"a list [1, 2] and [x] and [Note: y] [[CALC: 2]", "a list [1, 2] and [x] and [Note: y] [", []wantCall{
			{"calculator", `{"expression":"2"}`, "[CALC: 2]", ""}}},
		{"[SEARCH: cats]", "", []wantCall{{"SEARCH", "", "[SEARCH: cats]", ClassUnknownTool}}},
		{"[CALC: 12 * ", "", []wantCall{{"calculator", "", "[CALC: 12 * ", ClassUnterminated}}},
		{"end [CALC", "end [CALC", nil},
		{longCalc, longCalc[41:], []wantCall{{"calculator", "", longCalc[:41], ClassTooLong}}},
		{`[CALC: say "hi"]`, "", []wantCall{{"calculator", `{"expression":"say \"hi\""}`, `[CALC: say "hi"]`, ""}}},
		{"[CALC_OTHER_NAME_THAT_IS_WAY_TOO_LONG_TO_BE_ONE: 1]", "[CALC_OTHER_NAME_THAT_IS_WAY_TOO_LONG_TO_BE_ONE: 1]", nil},
	}
	for _, c := range cases {
		checkParse(t, np, c.text, c.content, c.calls)
	}
}

func TestBracketParserKnownOnly(t *testing.T) {
	reg := loadCalc(t)
	np := func() Parser { return NewBracketParser(reg, ParserOptions{KnownBracketsOnly: true}) }
	checkParse(t, np, "[NOTE: x] [CALC: 1]", "[NOTE: x] ", []wantCall{{"calculator", `{"expression":"1"}`, "[CALC: 1]", ""}})
}

func TestBracketParserStopsAtCall(t *testing.T) {
	reg := loadCalc(t)
	p := NewBracketParser(reg, ParserOptions{})
	r := p.Add("x [CALC: 1+1] = 2", false)
	if r.Content != "x " || len(r.Calls) != 1 || r.Rest != " = 2" {
		t.Fatalf("Add = %+v", r)
	}
}

func TestHermesParser(t *testing.T) {
	reg := loadCalc(t)
	np := func() Parser { return NewHermesParser(reg, ParserOptions{MaxCallBytes: 120}) }
	open, close := "<tool_call>", "</tool_call>"
	ok := `{"name": "calculator", "arguments": {"expression": "12 * 34"}}`
	long := open + `{"name": "calculator", "arguments": {"expression": "` + strings.Repeat("9", 200) + `"}}` + close
	cases := []struct {
		text, content string
		calls         []wantCall
	}{
		{"plain <b>text</b> <tool_", "plain <b>text</b> <tool_", nil},
		{"Let me compute.\n" + open + "\n" + ok + "\n" + close + "\nDone", "Let me compute.\n\nDone", []wantCall{
			{"calculator", `{"expression":"12 * 34"}`, open + "\n" + ok + "\n" + close, ""}}},
		{"<<tool_call>" + ok + close, "<", []wantCall{{"calculator", `{"expression":"12 * 34"}`, open + ok + close, ""}}},
		{"<tool_cal>" + open + `{"name":"calculator","arguments":"{\"expression\": \"1\"}"}` + close, "<tool_cal>", []wantCall{
			{"calculator", `{"expression":"1"}`, open + `{"name":"calculator","arguments":"{\"expression\": \"1\"}"}` + close, ""}}},
		{open + `{"name":"calculator","parameters":{"expression":"2"}}` + close, "", []wantCall{
			{"calculator", `{"expression":"2"}`, open + `{"name":"calculator","parameters":{"expression":"2"}}` + close, ""}}},
		{open + `{"name": "calculator", "arguments": {"expression": 5}}` + close, "", []wantCall{
			{"calculator", `{"expression":5}`, open + `{"name": "calculator", "arguments": {"expression": 5}}` + close, ClassSchema}}},
		{open + `{"name": "web", "arguments": {}}` + close, "", []wantCall{
			{"web", `{}`, open + `{"name": "web", "arguments": {}}` + close, ClassUnknownTool}}},
		{open + `{"name": "calculator", "arguments": {` + close, "", []wantCall{
			{"calculator", "", open + `{"name": "calculator", "arguments": {` + close, ClassBadJSON}}},
		{open + `{"arguments": {}}` + close, "", []wantCall{{"", "", open + `{"arguments": {}}` + close, ClassBadJSON}}},
		{open + `{"name":"calculator","arguments":{}} extra` + close, "", []wantCall{
			{"", "", open + `{"name":"calculator","arguments":{}} extra` + close, ClassBadJSON}}},
		{open + `{"name": "calculator"`, "", []wantCall{{"calculator", "", open + `{"name": "calculator"`, ClassUnterminated}}},
		{long, long[121:], []wantCall{{"calculator", "", long[:121], ClassTooLong}}},
		{"a </tool_call> b", "a </tool_call> b", nil},
	}
	for _, c := range cases {
		checkParse(t, np, c.text, c.content, c.calls)
	}
}

func TestCallTraj(t *testing.T) {
	c := Call{Name: "calculator", Raw: "[CALC: 1/]", ErrorClass: ClassSchema, Error: "bad"}
	if tc := c.Traj(); tc.ParseError != "schema: bad" || tc.Raw != c.Raw || tc.Name != "calculator" {
		t.Errorf("Traj() = %+v", tc)
	}
	if _, err := NewParser("xml", nil, ParserOptions{}); err == nil {
		t.Error("NewParser(xml) did not fail")
	}
}

// fuzzParser checks the streaming invariants of a parser on any text and any
// chunking: no panic; the same content and calls as one whole Add; every
// byte of the text accounted for exactly once (content + call raw text); and
// every call either valid or classified.
func fuzzParser(t *testing.T, newParser func() Parser, text string, cut uint64) {
	whole, wholeCalls := feed(newParser(), []string{text})
	rng := rand.New(rand.NewPCG(cut, 7))
	var chunks []string
	for rest := text; len(rest) > 0; {
		n := min(len(rest), 1+rng.IntN(8))
		chunks = append(chunks, rest[:n])
		rest = rest[n:]
	}
	content, calls := feed(newParser(), chunks)
	if content != whole || len(calls) != len(wholeCalls) {
		t.Fatalf("chunked parse differs: %q %d calls vs %q %d calls", content, len(calls), whole, len(wholeCalls))
	}
	total := len(content)
	for i, c := range calls {
		if c.Raw != wholeCalls[i].Raw || c.ErrorClass != wholeCalls[i].ErrorClass {
			t.Fatalf("call %d differs: %+v vs %+v", i, c, wholeCalls[i])
		}
		if c.ErrorClass == "" && c.Arguments == nil {
			t.Fatalf("valid call without arguments: %+v", c)
		}
		if c.ErrorClass != "" && c.Error == "" {
			t.Fatalf("failed call without detail: %+v", c)
		}
		total += len(c.Raw)
	}
	if total != len(text) {
		t.Fatalf("content and calls cover %d bytes of %d", total, len(text))
	}
}

func FuzzBracketParser(f *testing.F) {
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"[CALC: 12 * 34] = 408", "[[CALC:", "[X: y]", "[CALC: 1/0][CALC:]", "[C"} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint64) {
		fuzzParser(t, func() Parser { return NewBracketParser(reg, ParserOptions{MaxCallBytes: 64}) }, text, cut)
	})
}

func FuzzHermesParser(f *testing.F) {
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`<tool_call>{"name":"calculator","arguments":{"expression":"1"}}</tool_call>`,
		"<tool_call><tool_call></tool_call>", "<<tool_call>{}</tool_call", `<tool_call>{"name":"x","arguments":"{}"}</tool_call>`,
	} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint64) {
		fuzzParser(t, func() Parser { return NewHermesParser(reg, ParserOptions{MaxCallBytes: 256}) }, text, cut)
	})
}
