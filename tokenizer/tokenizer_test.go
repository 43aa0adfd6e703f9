package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// tinyByteLevel builds a small byte-level BPE tokenizer.json: the 256 byte
// tokens, a few merges, and some added tokens.
func tinyByteLevel(t testing.TB, mutate func(m map[string]any)) []byte {
	t.Helper()
	bl := newByteLevelTables()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[bl.byteToString[b]] = b
	}
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"Ġw", "o"}}
	for _, m := range merges {
		vocab[m[0]+m[1]] = len(vocab)
	}
	doc := map[string]any{
		"version": "1.0",
		"added_tokens": []any{
			map[string]any{"id": 300, "content": "<|end|>", "special": true, "normalized": false},
			map[string]any{"id": 301, "content": "<tool>", "special": false, "normalized": false},
		},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel"},
		"decoder":        map[string]any{"type": "ByteLevel"},
		"model":          map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	if mutate != nil {
		mutate(doc)
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestTinyEncodeDecode(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	ids, err := tok.Encode("hello wo<|end|>", false)
	if err != nil {
		t.Fatal(err)
	}
	hello, _ := tok.TokenToID("hello")
	wo, _ := tok.TokenToID("Ġwo")
	if want := []int32{hello, wo, 300}; !slices.Equal(ids, want) {
		t.Fatalf("ids = %v, want %v", ids, want)
	}
	for _, skip := range []bool{false, true} {
		got, err := tok.Decode(ids, skip)
		want := "hello wo<|end|>"
		if skip {
			want = "hello wo"
		}
		if err != nil || got != want {
			t.Fatalf("Decode(skip=%v) = %q, %v; want %q", skip, got, err, want)
		}
	}
	if s, ok := tok.IDToToken(wo); !ok || s != "Ġwo" {
		t.Fatalf("IDToToken = %q %v", s, ok)
	}
	if _, ok := tok.IDToToken(99999); ok {
		t.Fatal("IDToToken of an unknown id succeeded")
	}
	if sp := tok.Special(); sp.EOS != -1 || sp.BOS != -1 || len(sp.Added) != 2 {
		t.Fatalf("Special = %+v", sp)
	}
	if _, err := tok.Encode("bad \xff utf8", false); err == nil {
		t.Fatal("Encode accepted invalid UTF-8")
	}
}

func TestUnsupportedComponentsAreNamed(t *testing.T) {
	cases := []struct {
		field string
		value any
		want  string
	}{
		{"normalizer", map[string]any{"type": "BertNormalizer"}, `unsupported normalizer "BertNormalizer"`},
		{"pre_tokenizer", map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Punctuation"}}}, `pre_tokenizer.pretokenizers[0]: unsupported pre_tokenizer "Punctuation"`},
		{"decoder", map[string]any{"type": "WordPiece"}, `unsupported decoder "WordPiece"`},
		{"post_processor", map[string]any{"type": "Weird"}, `unsupported post_processor "Weird"`},
		{"model", map[string]any{"type": "Unigram", "vocab": []any{}}, `unsupported model "Unigram"`},
		{"pre_tokenizer", map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "a"}, "behavior": "Sideways"}, `unsupported split behavior "Sideways"`},
		{"truncation", map[string]any{"max_length": 8, "direction": "Up"}, `truncation: unsupported direction "Up"`},
		{"padding", map[string]any{"strategy": "Longest"}, `padding: unsupported strategy "Longest"`},
	}
	for _, c := range cases {
		data := tinyByteLevel(t, func(m map[string]any) { m[c.field] = c.value })
		_, err := Parse(data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s=%v: err = %v, want it to contain %q", c.field, c.value, err, c.want)
		}
	}
}

func TestLoadDir(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(tinyByteLevel(t, nil))
	zw.Close()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json.gz"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "generation_config.json"), []byte(`{"eos_token_id": 300}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, sp, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if sp.EOS != 300 || tok.VocabSize() != 264 {
		t.Fatalf("EOS %d, vocab %d", sp.EOS, tok.VocabSize())
	}
	if _, _, err := LoadDir(t.TempDir()); err == nil {
		t.Fatal("LoadDir of an empty folder succeeded")
	}
}

func TestLoadGzipAndMissing(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(filepath.Join(dir, "nope.json")); err == nil || !strings.Contains(err.Error(), "nope.json") {
		t.Fatalf("missing file: %v", err)
	}
	p := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(p, tinyByteLevel(t, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 256+6+2 {
		t.Fatalf("VocabSize = %d", tok.VocabSize())
	}
}

// Rust's from_utf8_lossy replaces each maximal subpart with one U+FFFD.
func TestLossyUTF8MatchesRust(t *testing.T) {
	cases := map[string]string{
		"a\xe4\xbdb":        "a\uFFFDb",           // truncated 3-byte: one replacement
		"\xe4\xbd":          "\uFFFD",             // at the end
		"\xff\xfe":          "\uFFFD\uFFFD",       // invalid leads: one each
		"\xed\xa0\x80":      "\uFFFD\uFFFD\uFFFD", // surrogate: ED then two continuations
		"\xf0\x9f\x98":      "\uFFFD",
		"\xf0\x9f\x98\x80!": "😀!",
		"\xc0\xaf":          "\uFFFD\uFFFD",
		"ok":                "ok",
	}
	for in, want := range cases {
		if got := string(appendLossyUTF8(nil, []byte(in))); got != want {
			t.Errorf("lossy(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestStreamDecoderNeverSplitsRunes(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	text := "héllo 😀 wo 中文<|end|>"
	ids, err := tok.Encode(text, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, skip := range []bool{false, true} {
		sd := tok.NewStreamDecoder(skip)
		var got strings.Builder
		for _, id := range ids {
			d, err := sd.Add(id)
			if err != nil {
				t.Fatal(err)
			}
			if !utf8ValidString(d) {
				t.Fatalf("delta %q splits a rune", d)
			}
			got.WriteString(d)
		}
		if rest := sd.Flush(); rest != "" {
			t.Fatalf("Flush = %q, want empty after whole runes", rest)
		}
		want, _ := tok.Decode(ids, skip)
		if got.String() != want {
			t.Fatalf("stream = %q, want %q", got.String(), want)
		}
	}
	// An unfinished rune is held back, then flushed as U+FFFD.
	sd := tok.NewStreamDecoder(false)
	if d, _ := sd.Add(0xE4); d != "" { // byte 0xE4 has id 0xE4 in tinyByteLevel
		t.Fatalf("partial rune emitted %q", d)
	}
	if rest := sd.Flush(); rest != "\uFFFD" {
		t.Fatalf("Flush = %q", rest)
	}
}

func TestStreamDecoderAllocs(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := tok.Encode(strings.Repeat("hello world ", 50), false)
	sd := tok.NewStreamDecoder(false)
	allocs := testing.AllocsPerRun(20, func() {
		for _, id := range ids {
			if _, err := sd.Add(id); err != nil {
				t.Fatal(err)
			}
		}
		sd.Flush()
	})
	if perToken := allocs / float64(len(ids)); perToken > 0.1 {
		t.Fatalf("%.3f allocs per token for ASCII tokens, want ~0", perToken)
	}
}

func TestConcurrentEncode(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tok.Encode(strings.Repeat("hello world<tool> ", 20), false)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				got, err := tok.Encode(strings.Repeat("hello world<tool> ", 20), false)
				if err != nil || !slices.Equal(got, want) {
					t.Errorf("concurrent encode differs: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestLoadSpecialFromConfig(t *testing.T) {
	tok, err := Parse(tinyByteLevel(t, func(m map[string]any) {
		m["added_tokens"] = append(m["added_tokens"].([]any),
			map[string]any{"id": 302, "content": "<s>", "special": true},
			map[string]any{"id": 303, "content": "<pad>", "special": true})
	}))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Nothing on disk: the guesses from tokenizer.json.
	sp, err := LoadSpecialFromConfig(dir, tok)
	if err != nil || sp.BOS != 302 || sp.PAD != 303 || sp.EOS != -1 {
		t.Fatalf("no config: %+v %v", sp, err)
	}
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("tokenizer_config.json", `{"bos_token": {"content": "<s>"}, "eos_token": "<|end|>", "pad_token": null}`)
	write("generation_config.json", `{"eos_token_id": [301, 300]}`)
	sp, err = LoadSpecialFromConfig(dir, tok)
	if err != nil {
		t.Fatal(err)
	}
	if sp.BOS != 302 || sp.EOS != 301 || !slices.Equal(sp.EOSIDs, []int32{301, 300}) {
		t.Fatalf("with config: %+v", sp)
	}
	write("tokenizer_config.json", `{"eos_token": "<nope>"}`)
	if _, err := LoadSpecialFromConfig(dir, tok); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Fatalf("unknown eos token: %v", err)
	}
}
