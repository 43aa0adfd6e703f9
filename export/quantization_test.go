package export

import (
	"path/filepath"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
)

// A trajectory's model quantization (a quantized actor's rollout) survives a
// Parquet round trip in the model_quantization column.
func TestParquetKeepsModelQuantization(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Job: "j", Prompt: "p", Size: 2, Model: "calc-int8"})
	g.Trajectories[0].Model.Quantization = "int8-b32-acc4"
	path := filepath.Join(t.TempDir(), "q.parquet")
	w, err := CreateTrajectories(path, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(g.Trajectories...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenTrajectories(path)
	got := trajtest.ReadAll(t, r, err)
	if len(got) != 2 || got[0].Model.Quantization != "int8-b32-acc4" || got[1].Model.Quantization != "" {
		t.Fatalf("model refs after the round trip: %+v", []any{got[0].Model, got[1].Model})
	}
}
