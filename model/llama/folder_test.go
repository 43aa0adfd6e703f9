package llama

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFolderFiles(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	dir := t.TempDir()
	w := mustRandom(t, cfg, 1)
	f, err := WriteFolder(dir, FolderSpec{Config: cfg, Weights: w, Safetensors: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config.json", "generation_config.json", "model.safetensors", "onnx/model.onnx", "tokenizer.json", "tokenizer_config.json"}
	if len(f.Files) != len(want) || f.ExternalData {
		t.Fatalf("files = %v external=%v", f.Files, f.ExternalData)
	}
	for i := range want {
		if f.Files[i] != want[i] {
			t.Fatalf("files = %v, want %v", f.Files, want)
		}
		if _, err := os.Stat(filepath.Join(dir, want[i])); err != nil {
			t.Fatal(err)
		}
	}
	got, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.HeadDimension() != 16 || got.KVHeads() != 2 || got.EOSTokenID.First() != ByteImEnd || got.Architectures[0] != "LlamaForCausalLM" {
		t.Errorf("config round trip: %+v", got)
	}
	var tc map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "tokenizer_config.json"))
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	if tc["eos_token"] != "<|im_end|>" || tc["bos_token"] != "<|im_start|>" || tc["chat_template"] != DefaultChatTemplate {
		t.Errorf("tokenizer_config = %v", tc)
	}
	mf, err := OpenFolder(dir)
	if err != nil {
		t.Fatal(err)
	}
	if mf.EOS.First() != ByteImEnd || mf.Pad != ByteEndOfText || mf.ChatTemplate != DefaultChatTemplate || mf.ModelPath != filepath.Join(dir, ModelFile) {
		t.Errorf("OpenFolder = %+v", mf)
	}
	// The safetensors copy loads back into the same weights.
	back, err := LoadSafetensors(dir, got)
	if err != nil {
		t.Fatal(err)
	}
	for n, ten := range w {
		if maxAbsDiff(back[n].Data, ten.Data) != 0 {
			t.Fatalf("%s changed through safetensors", n)
		}
	}
}

func TestWriteFolderRejectsTokenizerBeyondVocab(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	cfg.VocabSize = 200 // the byte tokenizer needs 259
	cfg.EOSTokenID, cfg.BOSTokenID, cfg.PadTokenID = TokenIDs{1}, nil, nil
	if _, err := WriteFolder(t.TempDir(), FolderSpec{Config: cfg, Weights: mustRandom(t, cfg, 1)}); err == nil {
		t.Fatal("a tokenizer with ids past vocab_size was accepted")
	}
}

func TestByteTokenizerSpecials(t *testing.T) {
	bos, eos, pad, size, err := TokenizerSpecials(ByteTokenizerJSON(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if bos.First() != ByteImStart || eos.First() != ByteImEnd || pad.First() != ByteEndOfText || size != ByteVocabSize {
		t.Fatalf("bos %v eos %v pad %v size %d", bos, eos, pad, size)
	}
	vocab, _, _ := tokenizerVocab(ByteTokenizerJSON())
	if vocab['A'] != "A" || vocab[' '] != "Ġ" || vocab['\n'] != "Ċ" || len(vocab) != ByteVocabSize {
		t.Fatalf("byte alphabet wrong: %q %q %q (%d tokens)", vocab['A'], vocab[' '], vocab['\n'], len(vocab))
	}
	tc := []byte(`{"eos_token": {"content": "<|endoftext|>"}, "bos_token": null}`)
	_, eos, _, _, err = TokenizerSpecials(ByteTokenizerJSON(), tc)
	if err != nil || eos.First() != ByteEndOfText {
		t.Fatalf("tokenizer_config eos ignored: %v %v", eos, err)
	}
}

// Rebuilding a folder inline after an external build must not leave
// transformers.js looking for a data file.
func TestWriteFolderExternalFlagFollowsTheModel(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	w := mustRandom(t, cfg, 2)
	dir := t.TempDir()
	if _, err := WriteFolder(dir, FolderSpec{Config: cfg, Weights: w, ONNX: ONNXOptions{External: ExternalAlways}}); err != nil {
		t.Fatal(err)
	}
	loaded, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if string(loaded.Extra["transformers.js_config"]) == "" {
		t.Fatal("external build did not set transformers.js_config")
	}
	loaded.Extra["transformers.js_config"] = json.RawMessage(`{"use_external_data_format":true,"kv_cache_dtype":"float32"}`)
	if _, err := WriteFolder(dir, FolderSpec{Config: loaded, Weights: w}); err != nil {
		t.Fatal(err)
	}
	again, err := LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, again.Extra["transformers.js_config"]); err != nil || compact.String() != `{"kv_cache_dtype":"float32"}` {
		t.Errorf("transformers.js_config after an inline rebuild = %s (%v)", compact.String(), err)
	}
	if _, err := os.Stat(filepath.Join(dir, "onnx", "model.onnx_data")); !os.IsNotExist(err) {
		t.Errorf("stale model.onnx_data left behind: %v", err)
	}
}
