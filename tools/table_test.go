package tools

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRegistryWriteTable(t *testing.T) {
	reg, err := LoadRegistry(context.Background(), "testdata/calc.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	var b bytes.Buffer
	if err := reg.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	want := "NAME        BRACKET  TIMEOUT  CONCURRENCY  MAX_OUTPUT  DESCRIPTION\n" +
		"calculator  CALC     3s       32           64          Evaluates an arithmetic expression exactly (+ - * / % ^ and parentheses).\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
	ex, err := LoadRegistry(context.Background(), "testdata/example.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	b.Reset()
	if err := ex.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	// Settings left to the default show as "-".
	if want := "\nweather     -        3s       -            256         Current weather in a city.\n"; !strings.Contains(b.String(), want) {
		t.Errorf("table:\n%s\nlacks %q", b.String(), want)
	}
}
