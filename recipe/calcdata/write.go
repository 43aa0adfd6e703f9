package calcdata

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/toolrl/toolrl/internal/atomicfile"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/recipe/bpetrain"
)

// WritePromptFile writes the split's first n prompts (Split.Problems) to
// path as WritePrompts does, atomically, creating path's folder, and
// returns the problems written.
func WritePromptFile(path string, split Split, n int) ([]Problem, error) {
	problems, err := split.Problems(n)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(path, func(w io.Writer) error { return WritePrompts(w, split, problems) }); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return problems, nil
}

// CountEasy is the number of problems whose Difficulty is DifficultyEasy.
func CountEasy(problems []Problem) int {
	easy := 0
	for _, p := range problems {
		if p.Difficulty() == DifficultyEasy {
			easy++
		}
	}
	return easy
}

// WriteModel writes the whole HF folder: weights, config, ONNX, the
// tokenizer and the calc policy's prompt format and tools.
func WriteModel(dir string, m *train.Model, tok *bpetrain.Tokenizer) error {
	tj, err := tok.MarshalJSON()
	if err != nil {
		return err
	}
	sp := int(tok.SpecialID())
	files, err := FolderFiles(tj, sp, bpetrain.SpecialToken)
	if err != nil {
		return fmt.Errorf("write model %s: %w", dir, err)
	}
	if err := m.WriteFolder(dir, sp, sp, sp, files); err != nil {
		return err
	}
	slog.Info("wrote model folder", "dir", dir)
	return nil
}

// SnapshotTo is a PolicyOptions.Snapshot that writes the model being
// trained as a folder dir/step-NNNNNN (WriteModel).
func SnapshotTo(dir string, tok *bpetrain.Tokenizer) func(m *train.Model, step int) error {
	return func(m *train.Model, step int) error {
		return WriteModel(filepath.Join(dir, fmt.Sprintf("step-%06d", step)), m, tok)
	}
}
