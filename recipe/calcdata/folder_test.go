package calcdata

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

func TestFolderFiles(t *testing.T) {
	dir := t.TempDir()
	files, err := FolderFiles(nil, 639, "<|endoftext|>")
	if err != nil {
		t.Fatal(err)
	}
	b := files.Extra["prompt_format.json"]
	if err := os.WriteFile(filepath.Join(dir, "tools.yaml"), files.Extra["tools.yaml"], 0o644); err != nil {
		t.Fatal(err)
	}
	want := `{"kind":"plain","template":"Question: {prompt}\nAnswer:","tool_call_format":"bracket"}`
	var got, w any
	_ = json.Unmarshal(b, &got)
	_ = json.Unmarshal([]byte(want), &w)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(w)
	if string(gb) != string(wb) {
		t.Fatalf("prompt_format.json = %s, want %s", gb, wb)
	}
	reg, err := tools.LoadRegistry(context.Background(), filepath.Join(dir, "tools.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	p, err := tools.NewParser("bracket", reg, tools.ParserOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := p.Add(CallText("(12+30)*4"), false)
	if len(res.Calls) != 1 || !res.Calls[0].OK() {
		t.Fatalf("bracket call not parsed: %+v", res)
	}
	ex := tools.NewExecutor(reg, tools.ExecutorOptions{})
	out := ex.Execute(context.Background(), res.Calls[0])
	if got := tools.BracketInjection(out); got != InjectedText("168") {
		t.Fatalf("injection %q, want %q", got, InjectedText("168"))
	}
}

func TestInjectedTextIsTools(t *testing.T) {
	if got, want := InjectedText("56088"), tools.BracketInjection(traj.ToolResult{OK: true, Content: "56088"}); got != want {
		t.Fatalf("InjectedText = %q, tools.BracketInjection = %q", got, want)
	}
}
