package learner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/actor"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/tinymodel"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/policystore"
)

// familyShapes are tiny configs of every family the builder builds: its
// tiny family shapes (tinymodel.FamilyShapes), and the "tiny" Llama shape
// with each feature those lack: as qwen2 with yarn rope (attention scaling),
// as Llama with attention_bias (q, k, v and o biases), with a head_dim other
// than hidden/heads, with linear and dynamic rope, and as mistral (no sliding
// window).
func familyShapes(t testing.TB) map[string]llama.Config {
	t.Helper()
	tiny, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	qwen2 := tiny
	qwen2.ModelType, qwen2.TieWordEmbeddings = "qwen2", true
	bias := tiny
	bias.AttentionBias = true
	headDim := tiny
	headDim.HeadDim = 24 // 4 heads × 24 = 96 ≠ hidden 64
	mistral := tiny
	mistral.ModelType = "mistral"
	// Qwen2.5's long-context yarn (attention scaling 0.1·ln 4 + 1 on cos and sin).
	yarn := qwen2
	yarn.RopeScaling = []byte(`{"type":"yarn","factor":4,"original_max_position_embeddings":512}`)
	linear := tiny
	linear.RopeScaling = []byte(`{"type":"linear","factor":2}`)
	// Dynamic: below max_position_embeddings, where the actor caps every
	// sequence, this is plain RoPE on both sides.
	dynamic := tiny
	dynamic.RopeScaling = []byte(`{"rope_type":"dynamic","factor":2}`)
	shapes := map[string]llama.Config{
		"qwen2": qwen2, "llama-attention-bias": bias, "llama-head-dim": headDim, "mistral": mistral,
		"qwen2-rope-yarn": yarn, "llama-rope-linear": linear, "llama-rope-dynamic": dynamic,
	}
	// The builder's tiny family shapes: Qwen2.5-0.5B, Qwen3-0.6B (q/k norm,
	// heads·head_dim = 2·hidden) and Llama-3.2-1B (llama3 rope) shrunk.
	for _, name := range tinymodel.FamilyShapes {
		c, err := llama.ShapeConfig(name)
		if err != nil {
			t.Fatal(err)
		}
		shapes[name] = c
	}
	return shapes
}

func sortedNames(m map[string]llama.Config) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// TestTrainConfigFamilies: every family maps onto model/train with its
// features switched on; what the builder refuses, the learner refuses,
// naming the key.
func TestTrainConfigFamilies(t *testing.T) {
	shapes := familyShapes(t)
	want := map[string]train.Config{}
	for name, c := range shapes {
		tc, err := TrainConfig(c)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want[name] = tc
	}
	if c := want["qwen2"]; !c.QKVBias || c.OBias || c.UntiedHead || c.ModelType != "qwen2" {
		t.Errorf("qwen2: %+v", c)
	}
	if c := want["llama-attention-bias"]; !c.QKVBias || !c.OBias || c.ModelType != "" {
		t.Errorf("llama attention_bias: %+v", c)
	}
	if c := want["llama-head-dim"]; c.HeadDim != 24 || c.HeadDimension() != 24 {
		t.Errorf("head_dim: %+v", c)
	}
	if c := want["tiny"]; c.HeadDim != 0 || c.QKVBias || c.OBias || c.QKNorm || c.RopeScaling != "" {
		t.Errorf("plain llama: %+v", c)
	}
	if c := want["tiny-qwen3"]; !c.QKNorm || c.QKVBias || c.HeadDim != 32 || c.ModelType != "qwen3" {
		t.Errorf("qwen3: %+v", c)
	}
	if c := want["tiny-llama3.2"]; !strings.Contains(c.RopeScaling, "llama3") || c.UntiedHead {
		t.Errorf("llama 3.2: %+v", c)
	}
	if c := want["qwen2-rope-yarn"]; !strings.Contains(c.RopeScaling, "yarn") {
		t.Errorf("qwen2 yarn: %+v", c)
	}
	tiny := shapes["tiny"]
	gpt2 := tiny
	gpt2.ModelType = "gpt2"
	mlpBias := tiny
	mlpBias.MLPBias = true
	window := tiny
	window.ModelType, window.Extra = "mistral", map[string]json.RawMessage{"sliding_window": json.RawMessage("4096")}
	unknownRope := tiny
	unknownRope.RopeScaling = []byte(`{"rope_type":"longrope","factor":2}`)
	qwenWindow := shapes["qwen2"]
	qwenWindow.UseSlidingWindow = true
	for name, c := range map[string]struct {
		cfg  llama.Config
		want string
	}{
		"gpt2":           {gpt2, "model_type"},
		"mlp_bias":       {mlpBias, "mlp_bias"},
		"mistral window": {window, "sliding_window"},
		"qwen2 window":   {qwenWindow, "use_sliding_window"},
		"rope type":      {unknownRope, "rope_type"},
	} {
		if _, err := TrainConfig(c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", name, err, c.want)
		}
	}
}

// TestExportRoundTrip: a model of each family written by model/train's
// WriteFolder loads back through LoadModel as the same architecture
// (config.json's model_type, the train.Config) with the same weights and
// logits, so a published policy folder is the family it was trained as.
func TestExportRoundTrip(t *testing.T) {
	shapes := familyShapes(t)
	for _, name := range sortedNames(shapes) {
		t.Run(name, func(t *testing.T) {
			tc, err := TrainConfig(shapes[name])
			if err != nil {
				t.Fatal(err)
			}
			tc.MaxPos = 64
			m, err := train.NewModel(tc, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range m.Params {
				if strings.HasSuffix(p.Name, ".bias") || strings.HasSuffix(p.Name, "_norm.weight") {
					for i := range p.W {
						p.W[i] += 0.01 * float32(i%5+1) // not the init's 0 or 1
					}
				}
			}
			dir := filepath.Join(t.TempDir(), name)
			if err := m.WriteFolder(dir, llama.ByteImStart, llama.ByteImEnd, llama.ByteEndOfText, train.FolderFiles{}); err != nil {
				t.Fatal(err)
			}
			back, cfg, err := LoadModel(dir)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ModelType != shapes[name].ModelType {
				t.Errorf("config.json model_type %q, want %q", cfg.ModelType, shapes[name].ModelType)
			}
			if back.Config != m.Config {
				t.Errorf("loaded config %+v, want %+v", back.Config, m.Config)
			}
			want := m.Weights()
			got := back.Weights()
			if len(got) != len(want) {
				t.Fatalf("%d tensors loaded, %d written", len(got), len(want))
			}
			for n, w := range want {
				g := got[n]
				if len(g) != len(w) {
					t.Fatalf("%s: %d values, want %d", n, len(g), len(w))
				}
				for i := range w {
					if g[i] != w[i] {
						t.Fatalf("%s[%d] = %g, wrote %g", n, i, g[i], w[i])
					}
				}
			}
		})
	}
}

// TestOnPolicyLogprobsPerFamily: for a tiny random folder of each family the
// actor (ONNX Runtime, KV-cached decode, tool pauses and injections) samples
// trajectories and records logprobs; the learner, loading the same folder,
// recomputes them teacher-forced. On-policy they agree within 1e-4 on every
// trained token: a bias, norm, head width or rotary table that the learner
// computes differently from the built graph fails it.
func TestOnPolicyLogprobsPerFamily(t *testing.T) {
	testsupport.RequireORT(t)
	shapes := familyShapes(t)
	for _, name := range sortedNames(shapes) {
		t.Run(name, func(t *testing.T) {
			worst, n := onPolicyMismatch(t, shapes[name])
			t.Logf("%s: max |Δlogprob| learner vs actor %.2g over %d tokens", name, worst, n)
			if worst > 1e-4 {
				t.Errorf("max |Δlogprob| %g > 1e-4", worst)
			}
		})
	}
}

// everyN is a detector that reports a completed call every n deltas.
type everyN struct{ n, seen int }

func (d *everyN) Feed(string) bool {
	d.seen++
	return d.seen%d.n == 0
}

// onPolicyMismatch writes a random folder of cfg (sharpened weights), rolls
// out 3 prompts × 4 samples with the actor at two temperatures, and returns
// the largest |actor − learner| logprob over the trained tokens and their
// count.
func onPolicyMismatch(t *testing.T, cfg llama.Config) (float64, int) {
	t.Helper()
	cfg.InitializerRange = 0.2 // peaked logits: a wrong feature shows
	w, err := llama.RandomWeights(cfg, 11)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "m")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pol, err := actor.Load(ctx, actor.LoadOptions{Dir: dir, IntraOpThreads: 1, InterOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer pol.Close()
	eng := actor.NewEngine(pol, actor.EngineOptions{MaxBatch: 8})
	defer eng.Close()
	type sample struct {
		seq  *actor.Sequence
		temp float64
	}
	var samples []sample
	for p, temp := range []float64{1, 0.7, 1.3} {
		prompt := make([]int32, 4+3*p)
		for i := range prompt {
			prompt[i] = int32('a' + (i*7+p*13)%26)
		}
		var seeds []uint64
		for i := range 4 {
			seeds = append(seeds, actor.SampleSeed(5, fmt.Sprint("p", p), i))
		}
		ss, err := eng.AddGroup(actor.GroupRequest{ID: fmt.Sprint("p", p), Prompt: prompt, Seeds: seeds,
			Sampling:    actor.Sampling{Temperature: temp, MaxSampledTokens: 24, EOS: []int32{}},
			NewDetector: func() actor.CallDetector { return &everyN{n: 6 + p} }})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range ss {
			samples = append(samples, sample{s, temp})
		}
	}
	for steps := 0; !eng.Idle(); steps++ {
		if steps > 10000 {
			t.Fatal("engine did not finish")
		}
		events, err := eng.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range events {
			if ev.Kind == actor.EventToolCall {
				if err := ev.Seq.Inject([]int32{'4', '2', ' '}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	m, _, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([]train.Sequence, len(samples))
	temps := make([]float64, len(samples))
	injected := 0
	for i, s := range samples {
		mask := append(make([]uint8, s.seq.PromptLen()), s.seq.LossMask()...)
		for _, v := range s.seq.LossMask() {
			if v == 0 {
				injected++
			}
		}
		seqs[i] = train.Sequence{Tokens: s.seq.Tokens(), LossMask: mask}
		temps[i] = s.temp
	}
	if injected == 0 {
		t.Fatal("no tool result was injected: the test does not cover masked spans")
	}
	lp, err := m.ForwardLogprobs(seqs, temps)
	if err != nil {
		t.Fatal(err)
	}
	worst := 0.0
	for k := range lp.Rows() {
		s := samples[lp.Seq[k]].seq
		got := s.Logprobs()[lp.Pos[k]-s.PromptLen()]
		worst = max(worst, math.Abs(float64(got)-lp.Logprobs[k]))
	}
	return worst, lp.Rows()
}

// TestPublishResumePerFamily: a learner on a base folder of each family
// publishes a version that is the same family (config.json model_type and
// rope_scaling as the base's) and resumes from it bit for bit: Resume's
// architecture check passes on the published (re-marshalled) config.json
// when the base's was written compactly (fails if rope_scaling is kept as
// written).
func TestPublishResumePerFamily(t *testing.T) {
	shapes := familyShapes(t)
	for _, name := range []string{"tiny-qwen2.5", "tiny-qwen3", "tiny-llama3.2", "qwen2-rope-yarn", "llama-attention-bias"} {
		t.Run(name, func(t *testing.T) {
			cfg := shapes[name]
			w, err := llama.RandomWeights(cfg, 2)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "base")
			if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
				t.Fatal(err)
			}
			// The base's config.json compact, as another tool may write it;
			// the published one is model/llama's indented form.
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			if err != nil {
				t.Fatal(err)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, raw); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.json"), compact.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			l, base := freshLearner(t, dir)
			for _, p := range l.Model().(*train.Model).Params {
				for i := range p.W {
					p.W[i] += 1e-3 * float32(i%7+1)
				}
			}
			store, err := policystore.Open(filepath.Join(t.TempDir(), "store"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			v, err := l.Publish(context.Background(), store, base, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pub, err := llama.LoadConfig(v.Dir)
			if err != nil {
				t.Fatal(err)
			}
			wantRope, _ := cfg.Rope()
			gotRope, _ := pub.Rope()
			if pub.ModelType != cfg.ModelType || fmt.Sprint(gotRope) != fmt.Sprint(wantRope) {
				t.Errorf("published model_type %q rope %+v, base %q rope %+v", pub.ModelType, gotRope, cfg.ModelType, wantRope)
			}
			resumed, _ := freshLearner(t, dir)
			if _, err := resumed.Resume(v); err != nil {
				t.Fatal(err)
			}
			got := resumed.Model().(*train.Model).Weights()
			for n, w := range l.Model().(*train.Model).Weights() {
				if fmt.Sprint(got[n]) != fmt.Sprint(w) {
					t.Fatalf("resumed %s differs from the published weights", n)
				}
			}
		})
	}
}
