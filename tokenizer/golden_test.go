package tokenizer

import (
	"bufio"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// goldenEntry is one line of tokenizer/testdata/tokenizers.txt.
type goldenEntry struct{ name, file, patch string }

func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

func listGoldens(t testing.TB) []goldenEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "tokenizers.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenEntry
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		e := goldenEntry{name: f[0], file: f[1]}
		if len(f) > 2 {
			e.patch = f[2]
		}
		out = append(out, e)
	}
	return out
}

// loadGoldenTokenizer builds the entry's tokenizer.json exactly as
// scripts/tokenizer/list.js does. It skips the test when the file has not been
// fetched (make scripts-npm), and fails instead under CI=true.
func loadGoldenTokenizer(t testing.TB, e goldenEntry) *Tokenizer {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tok, ok := loaded[e.name]; ok {
		return tok
	}
	tok, err := Parse(loadGoldenJSON(t, e))
	if err != nil {
		t.Fatalf("%s: %v", e.name, err)
	}
	loaded[e.name] = tok
	return tok
}

// Tokenizers are immutable, so tests share each one (loading the big ones
// dominates the package's test time).
var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadGoldenJSON returns the entry's tokenizer.json bytes (base file plus patch).
func loadGoldenJSON(t testing.TB, e goldenEntry) []byte {
	t.Helper()
	path := filepath.Join(repoRoot(t), e.file)
	data, err := os.ReadFile(path)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s: %v (run make scripts-npm)", e.name, err)
		}
		t.Skipf("%s: %v (run make scripts-npm)", e.name, err)
	}
	if e.patch != "" {
		var base map[string]any
		if err := json.Unmarshal(data, &base); err != nil {
			t.Fatal(err)
		}
		pdata, err := os.ReadFile(filepath.Join("testdata", "variants", e.patch))
		if err != nil {
			t.Fatal(err)
		}
		var patch map[string]any
		if err := json.Unmarshal(pdata, &patch); err != nil {
			t.Fatalf("%s: %v", e.patch, err)
		}
		for k, v := range patch {
			if k == "added_tokens_append" {
				base["added_tokens"] = append(base["added_tokens"].([]any), v.([]any)...)
			} else {
				base[k] = v
			}
		}
		if data, err = json.Marshal(base); err != nil {
			t.Fatal(err)
		}
	}
	return data
}

// goldenRecord is one line of a golden file (see scripts/tokenizer/gen_goldens.js).
type goldenRecord struct {
	I   *int    `json:"i"`
	R   *int    `json:"r"`
	IDs []int32 `json:"ids"`
	SP  []int32 `json:"sp"`
	D   *string `json:"d"`
	DSP *string `json:"dsp"`
	DS  *string `json:"ds"`

	// [before, after] forms: sp = before+ids+after, dsp = before+d+after.
	SPW  *[2][]int32 `json:"spw"`
	DSPW *[2]string  `json:"dspw"`
	DSW  *[2]string  `json:"dsw"`
}

type goldenHeader struct {
	Name      string `json:"name"`
	SHA256    string `json:"sha256"`
	Reference string `json:"reference"`
	Strings   int    `json:"strings"`
	VocabSize int    `json:"vocab_size"`
}

func readCorpus(t testing.TB) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "corpus.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var corpus []string
	if err := json.NewDecoder(zr).Decode(&corpus); err != nil {
		t.Fatal(err)
	}
	return corpus
}

func readGolden(t testing.TB, name string) (goldenHeader, []goldenRecord) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "golden", name+".jsonl.gz"))
	if err != nil {
		t.Fatalf("golden for %s: %v (run make tokenizer-goldens)", name, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	var hdr goldenHeader
	var recs []goldenRecord
	for first := true; sc.Scan(); first = false {
		if first {
			if err := json.Unmarshal(sc.Bytes(), &hdr); err != nil {
				t.Fatal(err)
			}
			continue
		}
		var r goldenRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return hdr, recs
}

func or[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// TestGoldenParity checks, for every listed tokenizer and every corpus string,
// that ids (with and without special tokens) and decoded text equal the
// reference's, and that the stream decoder reproduces Decode.
func TestGoldenParity(t *testing.T) {
	runGoldenParity(t, func(t *testing.T, e goldenEntry) Interface { return loadGoldenTokenizer(t, e) })
}

// runGoldenParity checks every listed tokenizer, built by load, against its
// golden file.
func runGoldenParity(t *testing.T, load func(t *testing.T, e goldenEntry) Interface) {
	corpus := readCorpus(t)
	if len(corpus) < 2000 {
		t.Fatalf("corpus has %d strings, want >= 2000", len(corpus))
	}
	for _, e := range listGoldens(t) {
		t.Run(e.name, func(t *testing.T) {
			tok := load(t, e)
			hdr, recs := readGolden(t, e.name)
			if hdr.Strings != len(corpus) {
				t.Fatalf("golden was made from %d strings, corpus has %d: regenerate", hdr.Strings, len(corpus))
			}
			if e.patch == "" {
				// An unpatched file is hashed as it is on disk.
				sum := sha256.Sum256(loadGoldenJSON(t, e))
				if got := hex.EncodeToString(sum[:]); got != hdr.SHA256 {
					t.Fatalf("%s changed since its golden was made: run make tokenizer-goldens TOKENIZERS=%s and commit tokenizer/testdata/golden/%s.jsonl.gz", e.file, e.name, e.name)
				}
			}
			if got := tok.VocabSize(); got != hdr.VocabSize {
				t.Errorf("VocabSize = %d, reference %d", got, hdr.VocabSize)
			}
			var checked, failed int
			fail := func(format string, args ...any) {
				failed++
				if failed <= 15 {
					t.Errorf(format, args...)
				}
			}
			for _, r := range recs {
				if r.R != nil {
					checkDecode(tok, r.IDs, false, or(r.D, ""), fmt.Sprintf("random ids #%d", *r.R), fail)
					checkDecode(tok, r.IDs, true, or(r.DS, ""), fmt.Sprintf("random ids #%d skip", *r.R), fail)
					continue
				}
				checked++
				text := corpus[*r.I]
				got, err := tok.Encode(text, false)
				if err != nil {
					fail("#%d %q: %v", *r.I, text, err)
					continue
				}
				if !slices.Equal(got, r.IDs) {
					fail("#%d %q:\n got  %v\n want %v", *r.I, text, got, r.IDs)
				}
				wantSP := r.IDs
				if r.SP != nil {
					wantSP = r.SP
				}
				if r.SPW != nil {
					wantSP = slices.Concat(r.SPW[0], r.IDs, r.SPW[1])
				}
				gotSP, err := tok.Encode(text, true)
				if err != nil || !slices.Equal(gotSP, wantSP) {
					fail("#%d %q addSpecial:\n got  %v %v\n want %v", *r.I, text, gotSP, err, wantSP)
				}
				d := or(r.D, text)
				wrapped := func(full *string, w *[2]string) string {
					if w != nil {
						return w[0] + d + w[1]
					}
					return or(full, d)
				}
				checkDecode(tok, r.IDs, false, d, fmt.Sprintf("#%d", *r.I), fail)
				checkDecode(tok, wantSP, false, wrapped(r.DSP, r.DSPW), fmt.Sprintf("#%d special", *r.I), fail)
				checkDecode(tok, wantSP, true, wrapped(r.DS, r.DSW), fmt.Sprintf("#%d skip special", *r.I), fail)
				checkStream(tok, r.IDs, fmt.Sprintf("#%d", *r.I), fail)
			}
			if failed > 0 {
				t.Fatalf("%s: %d mismatches over %d strings (reference %s)", e.name, failed, checked, hdr.Reference)
			}
			t.Logf("%s: %d/%d strings identical to %s", e.name, checked, checked, hdr.Reference)
		})
	}
}

func checkDecode(tok Interface, ids []int32, skip bool, want, what string, fail func(string, ...any)) {
	got, err := tok.Decode(ids, skip)
	if err != nil || got != want {
		fail("%s decode(%v, skip=%v):\n got  %q %v\n want %q", what, ids, skip, got, err, want)
	}
}

func checkStream(tok Interface, ids []int32, what string, fail func(string, ...any)) {
	checkStreamWith(tok, tok.NewStreamDecoder(false), ids, what, fail)
	// The reference's windowed algorithm, which the Rust backend and
	// decoders without a fast path use.
	checkStreamWith(tok, NewGenericStreamDecoder(tok.Decode, false), ids, what+" (generic)", fail)
}

func checkStreamWith(tok Interface, sd *StreamDecoder, ids []int32, what string, fail func(string, ...any)) {
	want, _ := tok.Decode(ids, false)
	var b strings.Builder
	for _, id := range ids {
		delta, err := sd.Add(id)
		if err != nil {
			fail("%s stream: %v", what, err)
			return
		}
		if !utf8ValidString(delta) {
			fail("%s stream delta %q is not valid UTF-8", what, delta)
		}
		b.WriteString(delta)
	}
	b.WriteString(sd.Flush())
	if b.String() != want {
		fail("%s stream:\n got  %q\n want %q", what, b.String(), want)
	}
}

// TestLoadSpecialFromRealConfigs reads the tokenizer_config.json the npm
// packages ship beside tokenizer.json. Expected ids are the reference's
// tokenToId of the configured tokens.
func TestLoadSpecialFromRealConfigs(t *testing.T) {
	want := map[string][3]int32{ // BOS, EOS, PAD
		"qwen3":       {-1, 151645, 151643},
		"llama3":      {128000, 128001, -1},
		"llama2":      {1, 2, -1},
		"gpt2":        {50256, 50256, -1},
		"gpt4o":       {199999, 199999, -1},
		"deepseek-v3": {0, 1, 1},
		"gemma3":      {2, 106, 0},
	}
	for _, e := range listGoldens(t) {
		w, ok := want[e.name]
		if !ok || e.patch != "" {
			continue
		}
		t.Run(e.name, func(t *testing.T) {
			tok := loadGoldenTokenizer(t, e)
			sp, err := LoadSpecialFromConfig(filepath.Dir(filepath.Join(repoRoot(t), e.file)), tok)
			if err != nil {
				t.Fatal(err)
			}
			if got := [3]int32{sp.BOS, sp.EOS, sp.PAD}; got != w {
				t.Fatalf("BOS/EOS/PAD = %v, want %v", got, w)
			}
			if len(sp.EOSIDs) == 0 || sp.EOSIDs[0] != w[1] {
				t.Fatalf("EOSIDs = %v", sp.EOSIDs)
			}
		})
	}
}
