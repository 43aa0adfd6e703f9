package llama

import (
	"bytes"
	"fmt"
	"testing"

	ortgo "github.com/yalue/onnxruntime_go"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// ortModel runs a built graph in the real ONNX Runtime.
type ortModel struct {
	cfg  Config
	sess *ortgo.DynamicAdvancedSession
}

func ioNames(cfg Config) (in, out []string) {
	in = []string{InputIDsName, AttentionMaskName, PositionIDsName}
	out = []string{LogitsName}
	for i := 0; i < cfg.NumHiddenLayers; i++ {
		in = append(in, PastKeyName(i), PastValueName(i))
		out = append(out, PresentKeyName(i), PresentValueName(i))
	}
	return in, out
}

func newORTModel(t testing.TB, cfg Config, w Weights) *ortModel {
	t.Helper()
	testsupport.RequireORT(t)
	var buf bytes.Buffer
	if err := EncodeONNX(&buf, cfg, w); err != nil {
		t.Fatal(err)
	}
	return newORTSession(t, cfg, func(in, out []string, opts *ortgo.SessionOptions) (*ortgo.DynamicAdvancedSession, error) {
		return ortgo.NewDynamicAdvancedSessionWithONNXData(buf.Bytes(), in, out, opts)
	})
}

func newORTSession(t testing.TB, cfg Config, open func(in, out []string, opts *ortgo.SessionOptions) (*ortgo.DynamicAdvancedSession, error)) *ortModel {
	t.Helper()
	testsupport.RequireORT(t)
	opts := oneThreadOptions(t)
	defer opts.Destroy()
	in, out := ioNames(cfg)
	sess, err := open(in, out, opts)
	if err != nil {
		t.Fatalf("ORT rejected the model: %v", err)
	}
	t.Cleanup(func() { sess.Destroy() })
	return &ortModel{cfg: cfg, sess: sess}
}

func flat(rows [][]int64) []int64 {
	var out []int64
	for _, r := range rows {
		out = append(out, r...)
	}
	return out
}

// run feeds one step and returns logits and the present cache in the
// reference's layout.
func (m *ortModel) run(t testing.TB, in Inputs, past *KVCache) *Output {
	t.Helper()
	cfg := m.cfg
	B, S := len(in.InputIDs), len(in.InputIDs[0])
	P := 0
	if past != nil {
		P = past.Len
	}
	T := P + S
	mask := in.AttentionMask
	if mask == nil {
		mask = make([][]int64, B)
		for b := range mask {
			mask[b] = ones(T)
		}
	}
	pos := in.PositionIDs
	if pos == nil {
		pos = PositionIDs(mask, S)
	}
	var values []ortgo.Value
	defer func() {
		for _, v := range values {
			v.Destroy()
		}
	}()
	add := func(v ortgo.Value, err error) {
		if err != nil {
			t.Fatal(err)
		}
		values = append(values, v)
	}
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S)), flat(in.InputIDs)))
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(T)), flat(mask)))
	add(ortgo.NewTensor(ortgo.NewShape(int64(B), int64(S)), flat(pos)))
	kvH, D := int64(cfg.KVHeads()), int64(cfg.HeadDimension())
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		var k, v []float32
		if past != nil {
			k, v = past.Key[l], past.Value[l]
		}
		add(ortgo.NewTensor(ortgo.NewShape(int64(B), kvH, int64(P), D), k))
		add(ortgo.NewTensor(ortgo.NewShape(int64(B), kvH, int64(P), D), v))
	}
	outs := make([]ortgo.Value, 1+2*cfg.NumHiddenLayers)
	if err := m.sess.Run(values, outs); err != nil {
		t.Fatalf("ORT run (B=%d S=%d P=%d): %v", B, S, P, err)
	}
	defer func() {
		for _, v := range outs {
			v.Destroy()
		}
	}()
	get := func(v ortgo.Value, want ...int64) []float32 {
		t.Helper()
		ten, ok := v.(*ortgo.Tensor[float32])
		if !ok {
			t.Fatalf("output is %T, want float32 tensor", v)
		}
		if got := ten.GetShape(); fmt.Sprint([]int64(got)) != fmt.Sprint(want) {
			t.Fatalf("output shape %v, want %v", got, want)
		}
		return append([]float32(nil), ten.GetData()...)
	}
	o := &Output{Batch: B, Seq: S, Vocab: cfg.VocabSize,
		Logits:  get(outs[0], int64(B), int64(S), int64(cfg.VocabSize)),
		Present: &KVCache{Batch: B, Len: T, KVHeads: int(kvH), HeadDim: int(D)}}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		o.Present.Key = append(o.Present.Key, get(outs[1+2*l], int64(B), kvH, int64(T), D))
		o.Present.Value = append(o.Present.Value, get(outs[2+2*l], int64(B), kvH, int64(T), D))
	}
	return o
}

func TestORTFullForwardMatchesReference(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 7)
			m := newORTModel(t, cfg, w)
			ref := mustReference(t, cfg, w)
			in := Inputs{InputIDs: [][]int64{tokens(9, cfg.VocabSize, 1), tokens(9, cfg.VocabSize, 2)}}
			got := m.run(t, in, nil)
			want, err := ref.Forward(in, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "logits", got.Logits, want.Logits, 1e-4)
			ids := in.InputIDs[0]
			naive := naiveForward(cfg, w, ids)
			worst := 0.0
			for s := range ids {
				n32 := make([]float32, len(naive[s]))
				for i, v := range naive[s] {
					n32[i] = float32(v)
				}
				worst = max(worst, maxAbsDiff(got.At(0, s), n32))
			}
			if worst > 1e-4 {
				t.Fatalf("ORT vs naive float64 forward: max |Δlogit| %.3g > 1e-4", worst)
			}
			t.Logf("%s: ORT vs reference max |Δlogit| %.3g, ORT vs naive float64 forward %.3g", name, maxAbsDiff(got.Logits, want.Logits), worst)
			for l := range want.Present.Key {
				assertClose(t, fmt.Sprintf("present.%d.key", l), got.Present.Key[l], want.Present.Key[l], 1e-4)
				assertClose(t, fmt.Sprintf("present.%d.value", l), got.Present.Value[l], want.Present.Value[l], 1e-4)
			}
		})
	}
}

func TestORTIncrementalDecodeMatchesFullForward(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 8)
			m := newORTModel(t, cfg, w)
			ref := mustReference(t, cfg, w)
			const prefill, steps = 5, 6
			seq := [][]int64{tokens(prefill+steps, cfg.VocabSize, 3), tokens(prefill+steps, cfg.VocabSize, 4)}
			full := m.run(t, Inputs{InputIDs: seq}, nil)
			// Dynamic RoPE past max_position_embeddings (6 here) rotates
			// each step's keys with that step's frequencies, so cached
			// decoding departs from a full forward by design (as in
			// transformers); there the steps are checked against the
			// reference decoding the same way.
			dynamic := false
			if rs, _ := cfg.Rope(); rs.Kind() == RopeDynamic {
				dynamic = true
			}
			refOut, err := ref.Forward(Inputs{InputIDs: [][]int64{seq[0][:prefill], seq[1][:prefill]}}, nil)
			if err != nil {
				t.Fatal(err)
			}

			head := [][]int64{seq[0][:prefill], seq[1][:prefill]}
			out := m.run(t, Inputs{InputIDs: head}, nil)
			assertClose(t, "prefill vs reference", out.Logits, refOut.Logits, 1e-4)
			for s := 0; s < prefill && !dynamic; s++ {
				for b := 0; b < 2; b++ {
					assertClose(t, fmt.Sprintf("prefill row %d pos %d", b, s), out.At(b, s), full.At(b, s), 1e-4)
				}
			}
			for s := prefill; s < prefill+steps; s++ {
				step := [][]int64{{seq[0][s]}, {seq[1][s]}}
				out = m.run(t, Inputs{InputIDs: step}, out.Present)
				if refOut, err = ref.Forward(Inputs{InputIDs: step}, refOut.Present); err != nil {
					t.Fatal(err)
				}
				for b := 0; b < 2; b++ {
					assertClose(t, fmt.Sprintf("step row %d pos %d vs reference step", b, s), out.At(b, 0), refOut.At(b, 0), 1e-4)
					if !dynamic {
						assertClose(t, fmt.Sprintf("step row %d pos %d", b, s), out.At(b, 0), full.At(b, s), 1e-4)
					}
				}
			}
			if dynamic {
				if d := maxAbsDiff(out.At(0, 0), full.At(0, prefill+steps-1)); d < 1e-3 {
					t.Errorf("dynamic RoPE: cached decode equals the full forward (max diff %.2g): frequencies did not follow the length", d)
				}
				return
			}
			for l := range full.Present.Key {
				assertClose(t, "final cache", out.Present.Key[l], full.Present.Key[l], 1e-4)
			}
		})
	}
}

// leftPadded builds a batch from sequences of different lengths, padded on
// the left with pad to the longest.
func leftPadded(seqs [][]int64, pad int64) Inputs {
	n := 0
	for _, s := range seqs {
		n = max(n, len(s))
	}
	var in Inputs
	for _, s := range seqs {
		ids := make([]int64, n)
		mask := make([]int64, n)
		for i := range ids {
			ids[i] = pad
		}
		copy(ids[n-len(s):], s)
		for i := n - len(s); i < n; i++ {
			mask[i] = 1
		}
		in.InputIDs = append(in.InputIDs, ids)
		in.AttentionMask = append(in.AttentionMask, mask)
	}
	in.PositionIDs = PositionIDs(in.AttentionMask, n)
	return in
}

func TestORTLeftPaddedBatchRowsMatchAlone(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		if rs, _ := cfg.Rope(); rs.Kind() == RopeDynamic {
			// Dynamic frequencies follow the batch's longest row (as in
			// transformers), so a padded row is not the row alone.
			continue
		}
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 9)
			m := newORTModel(t, cfg, w)
			ref := mustReference(t, cfg, w)
			seqs := [][]int64{tokens(3, cfg.VocabSize, 5), tokens(8, cfg.VocabSize, 6), tokens(1, cfg.VocabSize, 7)}
			batch := leftPadded(seqs, int64(ByteEndOfText))
			n := len(batch.InputIDs[0])
			got := m.run(t, batch, nil)
			assertFinite(t, "padded batch logits", got.Logits)
			refOut, err := ref.Forward(batch, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, "padded batch vs reference", got.Logits, refOut.Logits, 1e-4)

			// Two decode steps for the whole batch, past the padding.
			next := [][]int64{{17}, {18}, {19}}
			mask := make([][]int64, len(seqs))
			for b := range mask {
				mask[b] = append(append([]int64(nil), batch.AttentionMask[b]...), 1)
			}
			step := m.run(t, Inputs{InputIDs: next, AttentionMask: mask}, got.Present)
			assertFinite(t, "step logits", step.Logits)

			for b, s := range seqs {
				alone := m.run(t, Inputs{InputIDs: [][]int64{s}}, nil)
				for i := range s {
					assertClose(t, fmt.Sprintf("row %d pos %d", b, i), got.At(b, n-len(s)+i), alone.At(0, i), 1e-4)
				}
				aloneStep := m.run(t, Inputs{InputIDs: [][]int64{next[b]}}, alone.Present)
				assertClose(t, fmt.Sprintf("row %d decode step", b), step.At(b, 0), aloneStep.At(0, 0), 1e-4)
			}
		})
	}
}

// oneThreadOptions are session options with one intra-op and one inter-op
// thread: tests share two cores with everything else. The caller destroys
// them.
func oneThreadOptions(t testing.TB) *ortgo.SessionOptions {
	t.Helper()
	opts, err := ortgo.NewSessionOptions()
	if err != nil {
		t.Fatal(err)
	}
	if err := opts.SetIntraOpNumThreads(1); err != nil {
		opts.Destroy()
		t.Fatal(err)
	}
	if err := opts.SetInterOpNumThreads(1); err != nil {
		opts.Destroy()
		t.Fatal(err)
	}
	return opts
}
