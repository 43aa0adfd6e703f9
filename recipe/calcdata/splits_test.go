package calcdata

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// heldOutDigest is the sha256 of "id\tprompt\tanswer\n" over the 256 lines of
// data/calc/prompts.jsonl as the shipped model was evaluated on it (before the
// meta field was added): regenerating the file must keep these, so that the
// shipped model's eval numbers stay comparable.
const heldOutDigest = "5afd26cabc5ffddae350b2d91fcf7fd44f566fe6cf8a0eda3e9848dd7037f9f2"

// splitFile renders the split's shipped file as `toolrl model data` writes it.
func splitFile(t *testing.T, s Split) ([]byte, []Problem) {
	t.Helper()
	ps, err := s.Problems(s.Size())
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WritePrompts(&buf, s, ps); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), ps
}

func readShipped(t *testing.T, s Split) ([]byte, []PromptRecord) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(testsupport.RepoRoot(t), filepath.FromSlash(s.Path())))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := readPrompts(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return b, recs
}

// readPrompts reads JSONL prompt records into the generator's own type
// (the rollout reads prompt files with prompt.ReadFile).
func readPrompts(r io.Reader) ([]PromptRecord, error) {
	var out []PromptRecord
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		if len(sc.Bytes()) == 0 {
			continue
		}
		var rec PromptRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return nil, fmt.Errorf("read prompts line %d: %w", line, err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read prompts line %d: %w", line, err)
	}
	return out, nil
}

func projectionDigest(recs []PromptRecord) string {
	h := sha256.New()
	for _, r := range recs {
		h.Write([]byte(r.ID + "\t" + r.Prompt + "\t" + r.Answer + "\n"))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestShippedPromptFiles: the committed files are what the generator writes,
// byte for byte, on every run; the held-out set keeps its ids, prompts and
// answers; ids follow the split's prefix.
func TestShippedPromptFiles(t *testing.T) {
	for _, s := range []Split{SplitTest, SplitRL} {
		a, ps := splitFile(t, s)
		b, _ := splitFile(t, s)
		if !bytes.Equal(a, b) {
			t.Fatalf("%s: two generations differ", s)
		}
		shipped, recs := readShipped(t, s)
		if !bytes.Equal(a, shipped) {
			t.Fatalf("%s: %s differs from the generator's output; run `toolrl model data --split %s`", s, s.Path(), s)
		}
		if len(recs) != s.Size() || len(ps) != s.Size() {
			t.Fatalf("%s: %d lines, %d problems, want %d", s, len(recs), len(ps), s.Size())
		}
		for i, r := range recs {
			if want := fmt.Sprintf("%s%04d", s.IDPrefix(), i); r.ID != want {
				t.Fatalf("%s line %d: id %q, want %q", s, i+1, r.ID, want)
			}
		}
		if s == SplitTest {
			if got := projectionDigest(recs); got != heldOutDigest {
				t.Fatalf("held-out ids/prompts/answers changed: digest %s, want %s", got, heldOutDigest)
			}
		}
	}
}

// TestSplitsDisjoint: the RL prompts are neither held-out prompts nor prompts
// the shipped model was trained on, and the held-out prompts were not trained
// on either.
func TestSplitsDisjoint(t *testing.T) {
	_, test := readShipped(t, SplitTest)
	_, rl := readShipped(t, SplitRL)
	sft := sftPrompts()
	heldOut := map[string]bool{}
	for _, r := range test {
		k := normalizePrompt(r.Prompt)
		if sft[k] {
			t.Fatalf("held-out prompt %s is a training prompt: %q", r.ID, r.Prompt)
		}
		heldOut[k] = true
	}
	seen := map[string]bool{}
	for _, r := range rl {
		k := normalizePrompt(r.Prompt)
		switch {
		case heldOut[k]:
			t.Fatalf("rl prompt %s is a held-out prompt: %q", r.ID, r.Prompt)
		case sft[k]:
			t.Fatalf("rl prompt %s is a training prompt: %q", r.ID, r.Prompt)
		case seen[k]:
			t.Fatalf("rl prompt %s repeats: %q", r.ID, r.Prompt)
		}
		seen[k] = true
	}
	// sftPrompts is the trainer's stream: its first examples are TrainExamples'.
	ex := TrainExamples(1000, DefaultMix(), HeldOut)
	for _, e := range ex {
		if !sft[normalizePrompt(e.Prompt)] {
			t.Fatalf("training prompt missing from sftPrompts: %q", e.Prompt)
		}
	}
}

// TestDifficulty: every line carries meta.difficulty, and it follows the rule
// (easy iff drawn easy, which implies one operation); the RL set has the
// held-out set's easy share.
func TestDifficulty(t *testing.T) {
	for _, tm := range templates {
		if tm.easyOK && tm.ops != 1 {
			t.Fatalf("template %s can be drawn easy with %d operations", tm.name, tm.ops)
		}
	}
	easyIn := map[Split]int{}
	for _, s := range []Split{SplitTest, SplitRL} {
		_, ps := splitFile(t, s)
		_, recs := readShipped(t, s)
		for i, r := range recs {
			p := ps[i]
			want := DifficultyHard
			if p.Easy && p.Ops == 1 {
				want = DifficultyEasy
				easyIn[s]++
			}
			if r.Meta.Difficulty != want || p.Difficulty() != want {
				t.Fatalf("%s %s: difficulty %q (problem %q), want %q for %+v", s, r.ID, r.Meta.Difficulty, p.Difficulty(), want, p)
			}
			if p.Easy && !easyOperands(p) {
				t.Fatalf("%s %s: easy problem with large operands: %s", s, r.ID, p.Expr)
			}
		}
	}
	// round(1024 · e / 256)
	if want := (2*SplitRL.Size()*easyIn[SplitTest] + HeldOut) / (2 * HeldOut); easyIn[SplitRL] != want {
		t.Fatalf("rl: %d easy prompts, want %d (held-out %d of %d)", easyIn[SplitRL], want, easyIn[SplitTest], HeldOut)
	}
}

// easyOperands reports whether a one-operation expression has the generator's
// easy operands: 1–5, or for a division a divisor 2–5 and a quotient 1–5.
func easyOperands(p Problem) bool {
	i := strings.IndexAny(p.Expr, "+-*/")
	if i < 0 || strings.ContainsAny(p.Expr[i+1:], "+-*/()") {
		return false
	}
	a, errA := strconv.ParseInt(p.Expr[:i], 10, 64)
	b, errB := strconv.ParseInt(p.Expr[i+1:], 10, 64)
	if errA != nil || errB != nil {
		return false
	}
	if p.Expr[i] == '/' {
		return b >= 2 && b <= 5 && p.Answer >= 1 && p.Answer <= 5
	}
	return a >= 1 && a <= 5 && b >= 1 && b <= 5
}

func TestParseSplit(t *testing.T) {
	for _, s := range []string{"test", "rl"} {
		if sp, err := ParseSplit(s); err != nil || string(sp) != s {
			t.Fatalf("ParseSplit(%q) = %q, %v", s, sp, err)
		}
	}
	if _, err := ParseSplit("train"); err == nil {
		t.Fatal("ParseSplit(train) accepted")
	}
}
