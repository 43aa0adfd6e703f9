package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/tools/internal/proctest"
)

// TestRegistryAllBuiltins loads one registry with every built-in type and
// runs a call of each through the executor.
func TestRegistryAllBuiltins(t *testing.T) {
	dir := t.TempDir()
	server := filepath.Join(dir, "mcp-server")
	build := exec.Command("go", "build", "-o", server, "./mcptool/testdata/server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the test MCP server: %v\n%s", err, out)
	}
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct {
			City string `json:"city"`
		}
		body, _ := io.ReadAll(r.Body)
		json.Unmarshal(body, &in)
		fmt.Fprintf(w, "sunny in %s", in.City)
	}))
	defer web.Close()
	corpus, _ := filepath.Abs("testdata/corpus.jsonl")
	doc := fmt.Sprintf(`
defaults: {timeout: 20s}
tools:
  - type: calculator
    bracket: CALC
  - type: python
    settings: {cpu_seconds: 2}
  - type: search
    settings: {corpus: %q, k: 1}
  - type: http
    function:
      name: weather
      description: Current weather in a city.
      parameters:
        type: object
        properties: {city: {type: string}}
        required: [city]
    settings: {url: %q, timeout: 2s}
  - type: mcp
    settings: {command: [./mcp-server], prefix: "t_", include: [add, shout]}
`, corpus, web.URL+"/weather")
	path := filepath.Join(dir, "tools.yaml")
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	before := proctest.Descendants(os.Getpid())
	reg, err := LoadRegistry(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(reg.Names(), ","); got != "calculator,python,search,weather,t_add,t_shout" {
		t.Errorf("Names() = %q", got)
	}
	ex := NewExecutor(reg, ExecutorOptions{Logger: quiet})
	cases := []struct{ name, args, want string }{
		{"calculator", `{"expression":"2^10"}`, "1024"},
		{"python", `{"code":"print(sum(range(10)))"}`, "45\n"},
		{"search", `{"query":"capital of Germany"}`, "[1] Berlin (berlin)\nBerlin is the capital of Germany and its largest city."},
		{"weather", `{"city":"Oslo"}`, "sunny in Oslo"},
		{"t_add", `{"a":2,"b":3}`, "5"},
		{"t_shout", `{"text":"hey"}`, "HEY"},
	}
	for _, c := range cases {
		r := ex.Execute(context.Background(), Call{Name: c.name, Arguments: json.RawMessage(c.args)})
		if !r.OK || r.Content != c.want {
			t.Errorf("%s(%s) = %+v, want %q", c.name, c.args, r, c.want)
		}
	}
	if r := ex.Execute(context.Background(), Call{Name: "weather", Arguments: json.RawMessage(`{}`)}); r.ErrorClass != ClassSchema {
		t.Errorf("weather without city: %+v", r)
	}
	if err := reg.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := proctest.WaitDescendants(os.Getpid(), before, 10e9); err != nil {
		t.Error(err)
	}
}
