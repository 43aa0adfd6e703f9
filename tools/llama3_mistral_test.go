package tools

import (
	"context"
	"strings"
	"testing"
)

func TestLlama3Parser(t *testing.T) {
	reg := loadCalc(t)
	np := func() Parser { return NewLlama3Parser(reg, ParserOptions{MaxCallBytes: 120}) }
	params := `{"name": "calculator", "parameters": {"expression": "12 * 34"}}`
	args := `{"name": "calculator", "arguments": {"expression": "1+1"}}`
	long := `{"name": "calculator", "parameters": {"expression": "` + strings.Repeat("9", 200) + `"}}`
	cases := []struct {
		text, content string
		calls         []wantCall
	}{
		{"The answer is 408.", "The answer is 408.", nil},
		// The whole turn, leading and trailing whitespace allowed.
		{params, "", []wantCall{{"calculator", `{"expression":"12 * 34"}`, params, ""}}},
		{"\n  " + params + " \n", "\n  ", []wantCall{{"calculator", `{"expression":"12 * 34"}`, params + " \n", ""}}},
		{args, "", []wantCall{{"calculator", `{"expression":"1+1"}`, args, ""}}},
		// <|python_tag|> written literally (the actor feeds it as "").
		{llama3PythonTag + params, "", []wantCall{{"calculator", `{"expression":"12 * 34"}`, llama3PythonTag + params, ""}}},
		{" " + llama3PythonTag + " " + params, " ", []wantCall{{"calculator", `{"expression":"12 * 34"}`, llama3PythonTag + " " + params, ""}}},
		{strings.Repeat(" ", 300) + "x", strings.Repeat(" ", 300) + "x", nil}, // whitespace is not held: no too_long
		// A built-in tool's code after the tag is not a JSON call: content.
		{llama3PythonTag + `brave_search.call(query="x")`, llama3PythonTag + `brave_search.call(query="x")`, nil},
		// Not the whole turn, not such an object, cut off: content.
		{"Sure: " + params, "Sure: " + params, nil},
		{params + " and more", params + " and more", nil},
		{`{"name": "calculator"}`, `{"name": "calculator"}`, nil},
		{`{"answer": 408}`, `{"answer": 408}`, nil},
		{`{"name": "calculator", "parameters": {"expression": "1`, `{"name": "calculator", "parameters": {"expression": "1`, nil},
		{`{"name": 5, "parameters": {}}`, `{"name": 5, "parameters": {}}`, nil},
		{params + params, params + params, nil},
		{"<|eot_id|>", "<|eot_id|>", nil},
		// Braces inside strings do not end the object.
		{`{"name": "calculator", "parameters": {"expression": "}{"}}`, "", []wantCall{
			{"calculator", `{"expression":"}{"}`, `{"name": "calculator", "parameters": {"expression": "}{"}}`, ""}}},
		// Such an object naming an unknown tool or breaking the schema is a failed call.
		{`{"name": "web", "parameters": {}}`, "", []wantCall{{"web", `{}`, `{"name": "web", "parameters": {}}`, ClassUnknownTool}}},
		{`{"name": "calculator", "parameters": {"expression": 5}}`, "", []wantCall{
			{"calculator", `{"expression":5}`, `{"name": "calculator", "parameters": {"expression": 5}}`, ClassSchema}}},
		{long, long[121:], []wantCall{{"calculator", "", long[:121], ClassTooLong}}},
	}
	for _, c := range cases {
		checkParse(t, np, c.text, c.content, c.calls)
	}
}

// TestLlama3ParserCallEndsWithTheTurn: the call is reported only when the
// turn ends, and the parser then reads the next turn afresh.
func TestLlama3ParserCallEndsWithTheTurn(t *testing.T) {
	p := NewLlama3Parser(loadCalc(t), ParserOptions{})
	call := `{"name": "calculator", "parameters": {"expression": "2+2"}}`
	if r := p.Add(call, false); len(r.Calls) != 0 || r.Content != "" {
		t.Fatalf("before the turn's end: %+v, want nothing yet", r)
	}
	r := p.Add("", true)
	if len(r.Calls) != 1 || !r.Calls[0].OK() || string(r.Calls[0].Arguments) != `{"expression":"2+2"}` {
		t.Fatalf("at the turn's end: %+v", r)
	}
	if r := p.Add("The answer is 4.", true); len(r.Calls) != 0 || r.Content != "The answer is 4." {
		t.Fatalf("next turn: %+v", r)
	}
	// Plain text goes out as it comes once it cannot be a call.
	if r := p.Add("Hello", false); r.Content != "Hello" {
		t.Fatalf("prose is held: %+v", r)
	}
}

func TestMistralParser(t *testing.T) {
	reg := loadCalc(t)
	np := func() Parser { return NewMistralParser(reg, ParserOptions{MaxCallBytes: 120}) }
	a := `{"name": "calculator", "arguments": {"expression": "12 * 34"}}`
	b := `{"name": "calculator", "arguments": {"expression": "1+1"}}`
	bad := `{"name": "calculator", "arguments": {"expression": 1+}}`
	tc := mistralToolCalls
	long := tc + ` [{"name": "calculator", "arguments": {"expression": "` + strings.Repeat("9", 200) + `"}}]`
	cases := []struct {
		text, content string
		calls         []wantCall
	}{
		{"The answer is 408.", "The answer is 408.", nil},
		{tc + " [" + a + "]", "", []wantCall{{"calculator", `{"expression":"12 * 34"}`, tc + " [" + a + "]", ""}}},
		// Several calls, in order; text before the marker is content.
		{"Both: " + tc + "[" + a + ", " + b + "]", "Both: ", []wantCall{
			{"calculator", `{"expression":"12 * 34"}`, tc + "[" + a + ",", ""},
			{"calculator", `{"expression":"1+1"}`, " " + b + "]", ""}}},
		// The marker was a special token ("" text): the bare list at the turn's start.
		{" [" + a + "," + b + "]", " ", []wantCall{
			{"calculator", `{"expression":"12 * 34"}`, "[" + a + ",", ""},
			{"calculator", `{"expression":"1+1"}`, b + "]", ""}}},
		{"[ { \"name\": \"calculator\", \"arguments\": {\"expression\": \"3\"}}]", "", []wantCall{
			{"calculator", `{"expression":"3"}`, "[ { \"name\": \"calculator\", \"arguments\": {\"expression\": \"3\"}}]", ""}}},
		// A bare list not at the turn's start, or not of call objects, is content.
		{"x [" + a + "]", "x [" + a + "]", nil},
		{"[1, 2] and [{\"a\": 1}]", "[1, 2] and [{\"a\": 1}]", nil},
		{"[TOOL_CALL", "[TOOL_CALL", nil},
		{"[[TOOL_CALLS][" + b + "]", "[", []wantCall{{"calculator", `{"expression":"1+1"}`, tc + "[" + b + "]", ""}}},
		// A malformed call among valid ones fails alone.
		{tc + "[" + a + ", " + bad + ", " + b + "]", "", []wantCall{
			{"calculator", `{"expression":"12 * 34"}`, tc + "[" + a + ",", ""},
			{"calculator", "", " " + bad + ",", ClassBadJSON},
			{"calculator", `{"expression":"1+1"}`, " " + b + "]", ""}}},
		{tc + "[" + `{"arguments": {}}` + "]", "", []wantCall{{"", "", tc + `[{"arguments": {}}]`, ClassBadJSON}}},
		{tc + "[" + `{"name": "web", "arguments": {}}` + "]", "", []wantCall{{"web", "{}", tc + `[{"name": "web", "arguments": {}}]`, ClassUnknownTool}}},
		// A broken list: the rest of the turn is one bad call.
		{tc + " not json", "", []wantCall{{"", "", tc + " not json", ClassBadJSON}}},
		{tc + "[" + a + " x", "", []wantCall{{"calculator", "", tc + "[" + a + " x", ClassBadJSON}}},
		{tc + "[" + a + "] done", " done", []wantCall{{"calculator", `{"expression":"12 * 34"}`, tc + "[" + a + "]", ""}}},
		// The turn ended inside the list.
		{tc + "[" + a, "", []wantCall{{"calculator", "", tc + "[" + a, ClassUnterminated}}},
		{tc + `[{"name": "calculator"`, "", []wantCall{{"calculator", "", tc + `[{"name": "calculator"`, ClassUnterminated}}},
		{long, long[121:], []wantCall{{"calculator", "", long[:121], ClassTooLong}}},
	}
	for _, c := range cases {
		checkParse(t, np, c.text, c.content, c.calls)
	}
}

func TestNewParserForms(t *testing.T) {
	for _, form := range Forms() {
		if _, err := NewParser(form, nil, ParserOptions{}); err != nil {
			t.Errorf("NewParser(%s): %v", form, err)
		}
	}
	if _, err := NewParser("xml", nil, ParserOptions{}); err == nil || !strings.Contains(err.Error(), FormMistral) {
		t.Errorf("NewParser(xml) = %v, want an error listing the forms", err)
	}
}

func FuzzLlama3Parser(f *testing.F) {
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`{"name":"calculator","parameters":{"expression":"1"}}`, " <|python_tag|>{\"name\":\"x\",\"arguments\":{}}",
		`{"name":"calculator"} x`, "<|python_", `{"a":"}\""}`,
	} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint64) {
		fuzzParser(t, func() Parser { return NewLlama3Parser(reg, ParserOptions{MaxCallBytes: 256}) }, text, cut)
	})
}

func FuzzMistralParser(f *testing.F) {
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		`[TOOL_CALLS] [{"name":"calculator","arguments":{"expression":"1"}}, {"name":"x"}]`,
		` [{"name":"calculator","arguments":{}}]`, "[TOOL_CALLS][{]", "[[TOOL_CALLS]", `[TOOL_CALLS] [{"name":"a"},]`,
	} {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, text string, cut uint64) {
		fuzzParser(t, func() Parser { return NewMistralParser(reg, ParserOptions{MaxCallBytes: 256}) }, text, cut)
	})
}
