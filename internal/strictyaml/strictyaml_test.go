package strictyaml

import (
	"strings"
	"testing"
)

type doc struct {
	Name  string `yaml:"name"`
	Inner struct {
		K int `yaml:"k"`
	} `yaml:"inner"`
}

func TestDecode(t *testing.T) {
	var d doc
	if err := Decode([]byte("name: a\ninner:\n  k: 3\n"), &d); err != nil || d.Name != "a" || d.Inner.K != 3 {
		t.Fatalf("good document: %+v, %v", d, err)
	}
	if err := Decode(nil, &d); err != nil {
		t.Errorf("empty document: %v", err)
	}
	for _, c := range []struct{ in, want string }{
		{"name: a\nnmae: b\n", "line 2: field nmae not found"},
		{"inner:\n  kk: 1\n", "line 2: field kk not found"},
		{"name: a\n---\nname: b\n", "line 2: a second YAML document"},
		{"name: [\n", "yaml:"},
	} {
		if err := Decode([]byte(c.in), &d); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.in, err, c.want)
		}
	}
}
