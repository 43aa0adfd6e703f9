package curves

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/toolrl/toolrl/trainer"
)

// writeMinimalRun writes a metrics.jsonl of one iteration into dir.
func writeMinimalRun(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, trainer.MetricsFile), []byte("{\"iteration\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// ReadRuns labels runs by the labels given, else by folder name, else, for
// folders that share a name, by the path as given; it returns ReadRun's
// error for the first folder that fails.
func TestReadRunsLabels(t *testing.T) {
	dir := t.TempDir()
	a, b, c := filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(dir, "x", "a")
	for _, d := range []string{a, b, c} {
		writeMinimalRun(t, d)
	}
	labelsOf := func(runs []Run) []string {
		var ls []string
		for _, r := range runs {
			ls = append(ls, r.Label)
		}
		return ls
	}
	for _, tc := range []struct {
		dirs, labels, want []string
	}{
		{[]string{a, b}, nil, []string{"a", "b"}},
		{[]string{a, b}, []string{"sync", "async"}, []string{"sync", "async"}},
		{[]string{a, b, c + "/"}, nil, []string{a, "b", c}},
	} {
		runs, err := ReadRuns(tc.dirs, tc.labels)
		if err != nil {
			t.Fatal(err)
		}
		if got := labelsOf(runs); !slices.Equal(got, tc.want) {
			t.Errorf("ReadRuns(%v, %v): labels %v, want %v", tc.dirs, tc.labels, got, tc.want)
		}
	}
	if _, err := ReadRuns([]string{a, filepath.Join(dir, "nope")}, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing folder: %v, want fs.ErrNotExist", err)
	}
	if _, err := ReadRuns([]string{a, filepath.Join(dir, "x")}, nil); !errors.Is(err, ErrNoMetrics) {
		t.Errorf("a folder without metrics: %v, want ErrNoMetrics", err)
	}
}

func TestDefaultDir(t *testing.T) {
	if got, want := DefaultDir([]string{"out/a"}), filepath.Join("out/a", "plots"); got != want {
		t.Errorf("one run: %s, want %s", got, want)
	}
	if got, want := DefaultDir([]string{"out/a", "out/b"}), filepath.Join("out/a", "plots", "overlay"); got != want {
		t.Errorf("two runs: %s, want %s", got, want)
	}
}
