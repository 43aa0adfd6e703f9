package actor

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/tinymodel"
)

// TestLoadRefusesConfigThatContradictsGraph: a config.json whose vocab size,
// layer count, kv heads or eos id contradicts the ONNX graph is refused with
// both values named (before, the actor ran as if nothing were wrong).
func TestLoadRefusesConfigThatContradictsGraph(t *testing.T) {
	dir := tinymodel.Write(t, 1, nil)
	path := filepath.Join(dir, "config.json")
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Load(context.Background(), LoadOptions{Dir: dir})
	if err != nil {
		t.Fatalf("the untouched folder: %v", err)
	}
	p.Close()
	for _, c := range []struct {
		key   string
		value any
		want  []string
	}{
		{"vocab_size", 999, []string{"vocab_size 999", "320"}},
		{"num_hidden_layers", 5, []string{"num_hidden_layers 5", "2 layers"}},
		{"num_key_value_heads", 3, []string{"num_key_value_heads 3", "2 heads"}},
		{"eos_token_id", 4000, []string{"eos_token_id 4000", "[0, 320)"}},
		{"eos_token_id", []int{1, 777}, []string{"eos_token_id 777"}},
	} {
		var cfg map[string]any
		if err := json.Unmarshal(orig, &cfg); err != nil {
			t.Fatal(err)
		}
		cfg[c.key] = c.value
		b, _ := json.Marshal(cfg)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := Load(context.Background(), LoadOptions{Dir: dir})
		if err == nil {
			p.Close()
			t.Errorf("%s = %v: loaded", c.key, c.value)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s = %v: error %q lacks %q", c.key, c.value, err, w)
			}
		}
	}
}
