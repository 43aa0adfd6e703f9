package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReportLayout: a report read back from testdata/actor-report.json (a
// run of toolrl bench actor on a float and an int8 tiny model with
// --tools-every 4 --peer --rss 16) prints testdata/actor-report.md, the
// tables that run printed (but the first line, which names this machine's
// CPUs), and writes the same JSON.
func TestReportLayout(t *testing.T) {
	js, err := os.ReadFile("testdata/actor-report.json")
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile("testdata/actor-report.md")
	if err != nil {
		t.Fatal(err)
	}
	rep := &ActorReport{Options: ActorOptions{Models: []string{"/tmp/benchm/tiny-random", "/tmp/benchm/tiny-random-int8"},
		Concurrencies: []int{1, 8}, PromptLen: 8, NewTokens: 16, ToolsEvery: 4, Peer: true, PeerG: 8, PeerRepeats: 1, RSSTrajectories: 16}}
	if err := json.Unmarshal(js, rep); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.WriteTables(&out)
	_, got, _ := strings.Cut(out.String(), "\n")
	_, want, _ := strings.Cut(string(md), "\n")
	if got != want {
		t.Errorf("tables:\n%s\nwant:\n%s", got, want)
	}
	path := filepath.Join(t.TempDir(), "report.json")
	if err := rep.WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	if written, err := os.ReadFile(path); err != nil || !bytes.Equal(written, js) {
		t.Errorf("JSON (err %v):\n%s\nwant:\n%s", err, written, js)
	}
}
