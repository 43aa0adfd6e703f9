package llama

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// TestTransformersJSInterop builds a tiny model folder, lets
// @huggingface/transformers (Node, onnxruntime-node, local files only) load
// it and greedy-decode a left-padded batch, and checks every row against the
// Go reference's greedy decode of that prompt alone. `make interop-models`
// runs it verbosely; scripts/node_modules comes from `make test`'s
// dependencies (make scripts-npm).
func TestTransformersJSInterop(t *testing.T) {
	root := testsupport.RepoRoot(t)
	script := filepath.Join(root, "scripts", "models", "interop.mjs")
	_, node := testsupport.NodePackage(t, "@huggingface/transformers")
	for _, c := range []struct {
		config   string
		external bool
		quant    Quantization
	}{
		{"tiny", false, Quantization{}}, {"tiny", true, Quantization{}}, {"qwen2_tied_bias", false, Quantization{}},
		// Quantized folders (MatMulNBits, com.microsoft) at accuracy level
		// 0, against the reference on the dequantized weights.
		{"tiny", false, Quantization{Bits: 4}}, {"qwen2_tied_bias", true, Quantization{Bits: 8, LMHead: true}},
	} {
		t.Run(fmt.Sprintf("%s/external_data=%v/quantization=%s", c.config, c.external, c.quant.String()), func(t *testing.T) {
			testInterop(t, node, script, testConfigs(t)[c.config], c.external, c.quant)
		})
	}
}

func testInterop(t *testing.T, node, script string, cfg Config, external bool, q Quantization) {
	dir := filepath.Join(t.TempDir(), "toolrl-tiny")
	w := mustRandom(t, cfg, 42)
	mode := ExternalNever
	if external {
		mode = ExternalAlways
	}
	f, err := WriteFolder(dir, FolderSpec{Config: cfg, Weights: w, ONNX: ONNXOptions{External: mode, Quantize: q}})
	if err != nil || f.ExternalData != external {
		t.Fatalf("WriteFolder: external=%v err=%v", f.ExternalData, err)
	}
	dq, err := DequantizedWeights(cfg, w, q)
	if err != nil {
		t.Fatal(err)
	}
	ref := mustReference(t, cfg, dq)

	const maxNew = 16
	prompts := []string{"What is 2+3?", "Hi", "<|im_start|>user\nCompute 12*7.<|im_end|>\n<|im_start|>assistant\n"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script, dir, fmt.Sprint(maxNew)}, prompts...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\n%s", script, err, stderr.String())
	}
	var res struct {
		Chat string `json:"chat"`
		Rows []struct {
			PromptIDs []int64 `json:"prompt_ids"`
			NewIDs    []int64 `json:"new_ids"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("parse script output %q: %v", stdout.String(), err)
	}
	wantChat := "<|im_start|>user\nWhat is 2+3?<|im_end|>\n<|im_start|>assistant\n"
	if res.Chat != wantChat {
		t.Errorf("chat template rendered %q, want %q", res.Chat, wantChat)
	}
	if len(res.Rows) != len(prompts) {
		t.Fatalf("%d rows for %d prompts", len(res.Rows), len(prompts))
	}
	for i, row := range res.Rows {
		// The byte-level tokenizer maps bytes to themselves and specials to 256+.
		wantIDs := byteTokens(prompts[i])
		if fmt.Sprint(row.PromptIDs) != fmt.Sprint(wantIDs) {
			t.Errorf("row %d: transformers.js tokenized %q as %v, want %v", i, prompts[i], row.PromptIDs, wantIDs)
			continue
		}
		want, err := ref.Greedy(row.PromptIDs, maxNew, int64(cfg.EOSTokenID.First()))
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("row %d prompt %q: transformers.js %v, reference %v", i, prompts[i], row.NewIDs, want)
		if fmt.Sprint(row.NewIDs) != fmt.Sprint(want) {
			t.Errorf("row %d: transformers.js greedy %v != reference greedy %v", i, row.NewIDs, want)
		}
	}
}

// byteTokens encodes s with the default byte tokenizer: specials by id, every
// other byte as itself.
func byteTokens(s string) []int64 {
	var out []int64
	for len(s) > 0 {
		matched := false
		for i, sp := range byteSpecials {
			if len(s) >= len(sp) && s[:len(sp)] == sp {
				out = append(out, int64(ByteEndOfText+i))
				s = s[len(sp):]
				matched = true
				break
			}
		}
		if !matched {
			out = append(out, int64(s[0]))
			s = s[1:]
		}
	}
	return out
}
