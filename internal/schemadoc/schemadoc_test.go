package schemadoc

import (
	"flag"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

var update = flag.Bool("update", false, "rewrite docs/schema.md")

// docs/schema.md is what Generate writes from the Go definitions now:
// `make schema-doc` (go test ./internal/schemadoc -update) rewrites it.
func TestSchemaDocIsCurrent(t *testing.T) {
	root := filepath.Join("..", "..")
	got, err := Generate(root)
	if err != nil {
		t.Fatal(err)
	}
	testsupport.CheckGenerated(t, filepath.Join(root, "docs", "schema.md"), got, *update, "make schema-doc")
}

// The page names every field of every record once per table it is in, the
// renames, and every Parquet column.
func TestSchemaDocCoversTheRecords(t *testing.T) {
	got, err := Generate(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(got)
	for _, want := range []string{
		"| `input_ids` | array of integer | Tokens |", "| `response_mask` | array of 0/1 | LossMask |",
		"| `rollout_log_probs` | array of number (float32) | OldLogprobs |", "| `reward` | number | Reward.Total |",
		"| `reward_parts` | object of number, omitted when empty | Reward.Parts |",
		"| trajectory | `input_ids` | `tokens` |", "| advantage record | `rollout_log_probs` | `old_logprobs` |",
		"| `reward_<part>` | float64? | reward_parts.<part> |", "`response_mask` was `loss_mask`",
		"| `record` |", "`binary-le/v1`",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("schema.md lacks %q", want)
		}
	}
	for _, empty := range []string{"|  |\n"} {
		if n := strings.Count(doc, empty); n > 0 {
			t.Errorf("schema.md has %d rows without a meaning", n)
		}
	}
}
