package tokenizer

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
)

func TestConvertLines(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := tok.TokenToID("hello")
	for _, c := range []struct {
		name, in string
		o        LineOptions
		want     string
	}{
		{"ids", "hello\nhello<|end|>\n", LineOptions{}, "[" + itoa(hello) + "]\n[" + itoa(hello) + ",300]\n"},
		{"json input", `"hello\nhello"` + "\n", LineOptions{JSONInput: true}, "[" + itoa(hello) + ",10," + itoa(hello) + "]\n"},
		{"tokens", "hello wo\n", LineOptions{Tokens: true}, `["hello","Ġwo"]` + "\n"},
		{"decode", "[" + itoa(hello) + ",300]\n", LineOptions{Decode: true}, `"hello<|end|>"` + "\n"},
		{"decode skip special", "[" + itoa(hello) + ",300]\n", LineOptions{Decode: true, SkipSpecial: true}, `"hello"` + "\n"},
		{"html kept", "<tool>\n", LineOptions{Tokens: true}, `["<tool>"]` + "\n"},
	} {
		var out bytes.Buffer
		if err := ConvertLines(tok, strings.NewReader(c.in), &out, c.o); err != nil || out.String() != c.want {
			t.Errorf("%s: %q, %v; want %q", c.name, out.String(), err, c.want)
		}
	}
	var out bytes.Buffer
	err = ConvertLines(tok, strings.NewReader("[1]\nnot json\n"), &out, LineOptions{Name: "stdin", Decode: true})
	if err == nil || !strings.HasPrefix(err.Error(), "stdin line 2: want a JSON array of ids: ") {
		t.Errorf("bad second line: %v", err)
	}
	if err := ConvertLines(tok, strings.NewReader("x\n"), &out, LineOptions{Name: "in", JSONInput: true}); err == nil || !strings.HasPrefix(err.Error(), "in line 1: want a JSON string: ") {
		t.Errorf("not a JSON string: %v", err)
	}
}

func itoa(id int32) string { return strconv.Itoa(int(id)) }
