// Package curves draws a training run's learning curves: PNG charts of the
// figures `toolrl train` writes to metrics.jsonl and eval.jsonl, one chart
// per quantity against the iteration, several runs overlaid in each.
package curves

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/toolrl/toolrl/trainer"
)

// ErrNoMetrics is returned (wrapped, naming the folder) by ReadRun for a
// folder without metrics.jsonl.
var ErrNoMetrics = errors.New("no " + trainer.MetricsFile)

// ErrNoIterations is returned (wrapped, naming the file) by ReadRun for a
// metrics.jsonl without a single iteration.
var ErrNoIterations = errors.New("no iterations")

// Run is one training run's figures, read from its output folder.
type Run struct {
	// Label names the run in legends and titles.
	Label string
	// Dir is the output folder the figures were read from.
	Dir string
	// Iterations are metrics.jsonl's lines by ascending iteration; Evals
	// eval.jsonl's (none when the file is absent). An iteration written
	// twice (a resumed run redoing it) keeps its last line.
	Iterations []trainer.IterationMetrics
	Evals      []trainer.EvalMetrics
}

// ReadRun reads dir's metrics.jsonl (required, with at least one
// iteration) and eval.jsonl (optional), labelled with dir's base name.
func ReadRun(dir string) (Run, error) {
	run := Run{Label: filepath.Base(filepath.Clean(dir)), Dir: dir}
	if st, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return run, &fs.PathError{Op: "read run", Path: dir, Err: fs.ErrNotExist}
	} else if err != nil {
		return run, err
	} else if !st.IsDir() {
		return run, fmt.Errorf("%s is not a folder: %w", dir, ErrNoMetrics)
	}
	path := filepath.Join(dir, trainer.MetricsFile)
	its, err := readLines(path, func(m trainer.IterationMetrics) int { return m.Iteration })
	if errors.Is(err, fs.ErrNotExist) {
		return run, fmt.Errorf("%s: %w (is it the output folder of toolrl train?)", dir, ErrNoMetrics)
	}
	if err != nil {
		return run, err
	}
	if len(its) == 0 {
		return run, fmt.Errorf("%s: %w", path, ErrNoIterations)
	}
	run.Iterations = its
	evals, err := readLines(filepath.Join(dir, trainer.EvalFile), func(m trainer.EvalMetrics) int { return m.Iteration })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return run, err
	}
	run.Evals = evals
	return run, nil
}

// readLines decodes a JSONL file of T, one value per non-blank line, and
// returns them by ascending iteration, the last line of an iteration winning.
func readLines[T any](path string, iteration func(T) int) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	byIteration := map[int]T{}
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, err := r.ReadBytes('\n')
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read %s line %d: %w", path, n, err)
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			var v T
			if uerr := json.Unmarshal(line, &v); uerr != nil {
				return nil, fmt.Errorf("%s line %d: %w", path, n, uerr)
			}
			byIteration[iteration(v)] = v
		}
		if err == io.EOF {
			break
		}
	}
	out := make([]T, 0, len(byIteration))
	for _, k := range slices.Sorted(maps.Keys(byIteration)) {
		out = append(out, byIteration[k])
	}
	return out, nil
}

// ReadRuns reads each OUT folder in dirs (ReadRun) and labels its run: by
// labels when given (one per folder), else by the folder's name, or by the
// path as given when two folders share a name. It returns the first
// folder's error as ReadRun returns it.
func ReadRuns(dirs, labels []string) ([]Run, error) {
	byBase := map[string]int{}
	for _, d := range dirs {
		byBase[filepath.Base(filepath.Clean(d))]++
	}
	var runs []Run
	for i, d := range dirs {
		run, err := ReadRun(d)
		if err != nil {
			return nil, err
		}
		switch {
		case len(labels) > 0:
			run.Label = labels[i]
		case byBase[run.Label] > 1:
			run.Label = filepath.Clean(d)
		}
		runs = append(runs, run)
	}
	return runs, nil
}

// DefaultDir is the folder the charts of the runs read from dirs go to
// unless told otherwise: FIRST/plots for one run, FIRST/plots/overlay for
// several (FIRST: dirs[0]).
func DefaultDir(dirs []string) string {
	if len(dirs) == 1 {
		return filepath.Join(dirs[0], "plots")
	}
	return filepath.Join(dirs[0], "plots", "overlay")
}
