package tools

import (
	"context"
	"testing"

	"github.com/toolrl/toolrl/tools/calculator"
)

// The calculator's timeout is the design's 3 s: from the shipped registry
// files, and by default when neither the entry nor the file sets one.
func TestCalculatorTimeout(t *testing.T) {
	if CalculatorTimeout.String() != "3s" {
		t.Fatalf("CalculatorTimeout %v", CalculatorTimeout)
	}
	for _, path := range []string{"testdata/calc.yaml", "../models/calc/tools.yaml"} {
		reg, err := LoadRegistry(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		_, s, _ := reg.Lookup("calculator")
		reg.Close()
		if s.Timeout != CalculatorTimeout {
			t.Errorf("%s: calculator timeout %v, want %v", path, s.Timeout, CalculatorTimeout)
		}
	}
	bare, err := ParseRegistry(context.Background(), []byte("tools:\n  - type: calculator\n    function: {name: calc}\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	defer bare.Close()
	if _, s, _ := bare.Lookup("calc"); s.Timeout != CalculatorTimeout {
		t.Errorf("entry without timeout: %v, want %v", s.Timeout, CalculatorTimeout)
	}
	withDefaults, err := ParseRegistry(context.Background(), []byte("defaults: {timeout: 5s}\ntools:\n  - type: calculator\n"), ".")
	if err != nil {
		t.Fatal(err)
	}
	defer withDefaults.Close()
	if _, s, _ := withDefaults.Lookup("calculator"); s.Timeout.String() != "5s" {
		t.Errorf("file default 5s: %v", s.Timeout)
	}
	reg := NewRegistry()
	if err := reg.Register(NewCalculator(calculator.Limits{}), Settings{}); err != nil {
		t.Fatal(err)
	}
	if _, s, _ := reg.Lookup("calculator"); s.Timeout != CalculatorTimeout {
		t.Errorf("Register with zero Settings: %v", s.Timeout)
	}
}
