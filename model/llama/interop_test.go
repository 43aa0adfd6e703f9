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
// it, run a forward over a left-padded batch and greedy-decode it, and
// checks the forward's logits at every real position against the Go
// reference on the same batch (<= 1e-4) and every row's greedy tokens
// against the reference's greedy decode of that prompt alone. The family
// shapes (tiny-qwen2.5, tiny-qwen3, tiny-llama3.2) are the folders
// tinymodel.WriteShape writes. transformers.js reads no rope_scaling (RoPE,
// scaled or not, is inside the built graph) and knows model_type qwen3
// (its config normalisation reads head_dim and num_key_value_heads for the
// cache). `make interop-models` runs it verbosely; scripts/node_modules
// comes from `make test`'s dependencies (make scripts-npm).
func TestTransformersJSInterop(t *testing.T) {
	root := testsupport.RepoRoot(t)
	script := filepath.Join(root, "scripts", "models", "interop.mjs")
	_, node := testsupport.NodePackage(t, "@huggingface/transformers")
	shape := func(name string) Config {
		c, err := ShapeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		c.InitializerRange = 0.2 // peaked attention: a wrong op shows in the logits
		return c
	}
	for _, c := range []struct {
		name     string
		cfg      Config
		external bool
		quant    Quantization
	}{
		{"tiny", testConfigs(t)["tiny"], false, Quantization{}}, {"tiny", testConfigs(t)["tiny"], true, Quantization{}},
		{"qwen2_tied_bias", testConfigs(t)["qwen2_tied_bias"], false, Quantization{}},
		{"tiny-qwen2.5", shape("tiny-qwen2.5"), false, Quantization{}},
		{"tiny-qwen3", shape("tiny-qwen3"), false, Quantization{}},
		{"tiny-llama3.2", shape("tiny-llama3.2"), false, Quantization{}},
		{"rope_yarn", testConfigs(t)["rope_yarn"], false, Quantization{}},
		// Quantized folders (MatMulNBits, com.microsoft) at accuracy level
		// 0, against the reference on the dequantized weights.
		{"tiny", testConfigs(t)["tiny"], false, Quantization{Bits: 4}},
		{"qwen2_tied_bias", testConfigs(t)["qwen2_tied_bias"], true, Quantization{Bits: 8, LMHead: true}},
		{"tiny-qwen3", shape("tiny-qwen3"), false, Quantization{Bits: 4}},
	} {
		t.Run(fmt.Sprintf("%s/external_data=%v/quantization=%s", c.name, c.external, c.quant.String()), func(t *testing.T) {
			testInterop(t, node, script, c.cfg, c.external, c.quant)
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
		Chat          string    `json:"chat"`
		InputIDs      [][]int64 `json:"input_ids"`
		AttentionMask [][]int64 `json:"attention_mask"`
		Logits        struct {
			Dims []int     `json:"dims"`
			Data []float32 `json:"data"`
		} `json:"logits"`
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
	refOut, err := ref.Forward(Inputs{InputIDs: res.InputIDs, AttentionMask: res.AttentionMask}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Logits.Dims) != fmt.Sprint([]int{refOut.Batch, refOut.Seq, refOut.Vocab}) || len(res.Logits.Data) != len(refOut.Logits) {
		t.Fatalf("transformers.js logits dims %v (%d values), want [%d %d %d]", res.Logits.Dims, len(res.Logits.Data), refOut.Batch, refOut.Seq, refOut.Vocab)
	}
	worst := 0.0
	for b, mrow := range res.AttentionMask {
		for s, m := range mrow {
			if m == 0 {
				continue
			}
			off := (b*refOut.Seq + s) * refOut.Vocab
			d := maxAbsDiff(res.Logits.Data[off:off+refOut.Vocab], refOut.At(b, s))
			worst = max(worst, d)
			if d > 1e-4 {
				t.Fatalf("row %d position %d: transformers.js logits differ from the reference by %.3g", b, s, d)
			}
		}
	}
	t.Logf("transformers.js forward vs reference: max |Δlogit| %.3g over the real positions", worst)
	for i, row := range res.Rows {
		// The byte-level tokenizer maps bytes to themselves and specials to 256+.
		wantIDs := byteTokens(prompts[i])
		if fmt.Sprint(row.PromptIDs) != fmt.Sprint(wantIDs) {
			t.Errorf("row %d: transformers.js tokenized %q as %v, want %v", i, prompts[i], row.PromptIDs, wantIDs)
			continue
		}
		var stop []int64
		for _, id := range cfg.EOSTokenID {
			stop = append(stop, int64(id))
		}
		want, err := ref.Greedy(row.PromptIDs, maxNew, stop...)
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
