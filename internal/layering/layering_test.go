// Package layering holds one test: toolrl's import graph flows one way, from
// the data model up to the CLI, in the order of the pipeline (prompts →
// rollout (actor, tools) → advantage → learner → policy store → actor).
package layering_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

const module = "github.com/toolrl/toolrl/"

// layers places every package of the module. A package may import only
// packages of a lower layer, so the graph is acyclic by construction and a
// reader finds each stage of the pipeline above what it builds on. A new
// package must be placed here (the test fails until it is).
var layers = []struct {
	name     string
	packages []string
}{
	{"helpers the leaf libraries share", []string{"internal/urlredact", "internal/atomicfile", "internal/bytesize"}},
	{"data, formats and leaf libraries", []string{
		"traj", "tokenizer", "tokenizer/internal/genunicode", "policystore",
		"model/safetensors", "setting", "internal/procmem", "internal/ort", "internal/openblas", "internal/samefile", "internal/metricsserver", "internal/strictyaml", "internal/interrupt", "internal/fastmath", "chat",
		"tools/calculator", "tools/httptool", "tools/mcptool", "tools/python", "tools/search", "tools/internal/proctest",
	}},
	{"the network and the tool registry", []string{"traj/wire", "model/llama", "tools", "internal/trajtest"}},
	{"actor, differentiable model, GRPO math, streams, files", []string{
		"actor", "model/train", "advantage", "stream", "export", "reward", "internal/testsupport", "recipe/bpetrain",
	}},
	{"where prompts come from and groups go: the prompt feeds, the sinks and the settings record they keep", []string{"prompt", "sink"}},
	{"pipeline stages: rollout, advantage service and offline pass, learner", []string{
		"orchestrator", "advantage/serve", "advantage/offline", "learner", "export/jobstream",
		"internal/tinymodel", "recipe/calcdata", "internal/schemadoc",
	}},
	{"the closed loop; the actor benchmark", []string{"trainer", "bench"}},
	{"its charts", []string{"curves"}},
	{"the held-out evaluation's report", []string{"recipe/calceval"}},
	{"the CLI", []string{"cmd/toolrl"}},
}

type listed struct {
	ImportPath  string
	Imports     []string
	TestImports []string
}

func TestImportsFlowOneWay(t *testing.T) {
	root := testsupport.RepoRoot(t)
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l.packages {
			layerOf[p] = i
		}
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	seen := map[string]bool{}
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list: %v", err)
		}
		name := strings.TrimPrefix(p.ImportPath, module)
		if name == "internal/layering" {
			continue
		}
		seen[name] = true
		li, ok := layerOf[name]
		if !ok {
			t.Errorf("package %s is in no layer: place it in internal/layering's table", name)
			continue
		}
		for _, imp := range p.Imports {
			dep, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if lj, ok := layerOf[dep]; ok && lj >= li {
				t.Errorf("%s (layer %d, %s) imports %s (layer %d, %s): imports must go to a lower layer",
					name, li, layers[li].name, dep, lj, layers[lj].name)
			}
		}
	}
	var stale []string
	for p := range layerOf {
		if !seen[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("the layer table names packages that do not exist: %s", strings.Join(stale, ", "))
	}
	if testing.Verbose() {
		for i, l := range layers {
			ps := slices.Clone(l.packages)
			sort.Strings(ps)
			fmt.Printf("layer %d, %s: %s\n", i, l.name, strings.Join(ps, " "))
		}
	}
}

var update = flag.Bool("update", false, "rewrite the floors section of docs/architecture.md")

const (
	floorsStart = "<!-- floors: written by `go test ./internal/layering -update` from its table -->"
	floorsEnd   = "<!-- end of floors -->"
)

// floorsTable renders the layer table as docs/architecture.md shows it.
func floorsTable() string {
	var b strings.Builder
	b.WriteString("| floor | what | packages |\n|---|---|---|\n")
	for i, l := range layers {
		ps := slices.Clone(l.packages)
		sort.Strings(ps)
		for j, p := range ps {
			ps[j] = "`" + p + "`"
		}
		fmt.Fprintf(&b, "| %d | %s | %s |\n", i, l.name, strings.Join(ps, ", "))
	}
	return b.String()
}

// docs/architecture.md's floors are this test's table: the page cannot
// drift from the rule the test enforces.
func TestArchitectureDocShowsTheFloors(t *testing.T) {
	path := filepath.Join(testsupport.RepoRoot(t), "docs", "architecture.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	i, j := strings.Index(doc, floorsStart), strings.Index(doc, floorsEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no floors section (%q ... %q)", path, floorsStart, floorsEnd)
	}
	want := doc[:i+len(floorsStart)] + "\n" + floorsTable() + doc[j:]
	if *update && want != doc {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = want
	}
	if doc != want {
		t.Errorf("%s's floors differ from internal/layering's table: run go test ./internal/layering -update", path)
	}
}
