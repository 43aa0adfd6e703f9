package llama

import (
	"fmt"
	"math"
	"testing"
)

// naiveForward is transformers' LlamaForCausalLM forward for one unpadded
// sequence written as literally as possible, in float64: explicit repeat_kv,
// rotate_half by concatenation, a causal mask of -inf. It shares no code with
// Reference, so agreement checks the reference's semantics, not just its
// agreement with the graph.
func naiveForward(cfg Config, w Weights, ids []int64) [][]float64 {
	H, D := cfg.HiddenSize, cfg.HeadDimension()
	nH, kvH := cfg.NumAttentionHeads, cfg.KVHeads()
	S := len(ids)
	vec := func(name string) []float64 {
		out := make([]float64, len(w[name].Data))
		for i, v := range w[name].Data {
			out[i] = float64(v)
		}
		return out
	}
	lin := func(x []float64, name string, bias string) []float64 {
		t := w[name]
		out := make([]float64, t.Shape[0])
		for o := range out {
			var s float64
			for i, xv := range x {
				s += xv * float64(t.Data[o*t.Shape[1]+i])
			}
			if bias != "" {
				s += float64(w[bias].Data[o])
			}
			out[o] = s
		}
		return out
	}
	norm := func(x []float64, name string) []float64 {
		var ms float64
		for _, v := range x {
			ms += v * v
		}
		r := 1 / math.Sqrt(ms/float64(len(x))+cfg.RMSNormEps)
		g := vec(name)
		out := make([]float64, len(x))
		for i, v := range x {
			out[i] = v * r * g[i]
		}
		return out
	}
	rotateHalf := func(x []float64) []float64 {
		return append(append([]float64{}, negate(x[D/2:])...), x[:D/2]...)
	}
	invFreq, attnScale := naiveRopeFrequencies(cfg, S)
	rope := func(x []float64, pos int) []float64 {
		out := make([]float64, D)
		rot := rotateHalf(x)
		for i := 0; i < D; i++ {
			ang := float64(pos) * invFreq[i%(D/2)]
			out[i] = x[i]*math.Cos(ang)*attnScale + rot[i]*math.Sin(ang)*attnScale
		}
		return out
	}
	// Qwen3's q_norm / k_norm: RMSNorm of each head over head_dim.
	headNorm := func(x []float64, name string) []float64 {
		if name == "" {
			return x
		}
		return norm(x, name)
	}
	qNorm, kNorm := "", ""
	bias := func(l int, p string) string {
		if cfg.QKVBias() {
			return layerName(l, "self_attn."+p+"_proj.bias")
		}
		return ""
	}
	h := make([][]float64, S)
	for s, id := range ids {
		h[s] = vec(EmbedName)[int(id)*H : int(id+1)*H]
	}
	for l := 0; l < cfg.NumHiddenLayers; l++ {
		if cfg.ModelType == "qwen3" {
			qNorm, kNorm = layerName(l, "self_attn.q_norm.weight"), layerName(l, "self_attn.k_norm.weight")
		}
		q := make([][][]float64, nH)  // [head][s][D]
		k := make([][][]float64, kvH) // [kvhead][s][D]
		v := make([][][]float64, kvH)
		for s := 0; s < S; s++ {
			x := norm(h[s], layerName(l, "input_layernorm.weight"))
			qs := lin(x, layerName(l, "self_attn.q_proj.weight"), bias(l, "q"))
			ks := lin(x, layerName(l, "self_attn.k_proj.weight"), bias(l, "k"))
			vs := lin(x, layerName(l, "self_attn.v_proj.weight"), bias(l, "v"))
			for hd := 0; hd < nH; hd++ {
				q[hd] = append(q[hd], rope(headNorm(qs[hd*D:(hd+1)*D], qNorm), s))
			}
			for g := 0; g < kvH; g++ {
				k[g] = append(k[g], rope(headNorm(ks[g*D:(g+1)*D], kNorm), s))
				v[g] = append(v[g], vs[g*D:(g+1)*D])
			}
		}
		// repeat_kv: query head hd uses kv head hd / (nH/kvH).
		for s := 0; s < S; s++ {
			attn := make([]float64, nH*D)
			for hd := 0; hd < nH; hd++ {
				g := hd / (nH / kvH)
				scores := make([]float64, S)
				mx := math.Inf(-1)
				for t := 0; t < S; t++ {
					if t > s {
						scores[t] = math.Inf(-1)
						continue
					}
					var dot float64
					for i := 0; i < D; i++ {
						dot += q[hd][s][i] * k[g][t][i]
					}
					scores[t] = dot / math.Sqrt(float64(D))
					mx = math.Max(mx, scores[t])
				}
				var sum float64
				for t := range scores {
					scores[t] = math.Exp(scores[t] - mx)
					sum += scores[t]
				}
				for t := range scores {
					for i := 0; i < D; i++ {
						attn[hd*D+i] += scores[t] / sum * v[g][t][i]
					}
				}
			}
			ob := ""
			if cfg.OBias() {
				ob = layerName(l, "self_attn.o_proj.bias")
			}
			o := lin(attn, layerName(l, "self_attn.o_proj.weight"), ob)
			for i := range o {
				h[s][i] += o[i]
			}
			x := norm(h[s], layerName(l, "post_attention_layernorm.weight"))
			gate := lin(x, layerName(l, "mlp.gate_proj.weight"), "")
			up := lin(x, layerName(l, "mlp.up_proj.weight"), "")
			for i := range gate {
				gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
			}
			d := lin(gate, layerName(l, "mlp.down_proj.weight"), "")
			for i := range d {
				h[s][i] += d[i]
			}
		}
	}
	head := LMHeadName
	if cfg.TieWordEmbeddings {
		head = EmbedName
	}
	out := make([][]float64, S)
	for s := range h {
		out[s] = lin(norm(h[s], NormName), head, "")
	}
	return out
}

// naiveRopeFrequencies writes out the published RoPE variants in float64
// for a sequence of S tokens at positions 0..S-1, independently of RoPE:
// the inverse frequencies [D/2] and the factor on cos and sin.
func naiveRopeFrequencies(cfg Config, S int) ([]float64, float64) {
	D := cfg.HeadDimension()
	rs, err := cfg.Rope()
	if err != nil {
		panic(err)
	}
	plain := func(theta float64) []float64 {
		f := make([]float64, D/2)
		for j := range f {
			f[j] = 1 / math.Pow(theta, float64(2*j)/float64(D))
		}
		return f
	}
	f := plain(cfg.Theta())
	switch rs.Type {
	case "linear": // Kaiokendev: positions divided by factor.
		for j := range f {
			f[j] /= rs.Factor
		}
	case "dynamic": // NTK-aware: theta grown for the sequence length.
		maxPos := float64(cfg.MaxPositionEmbeddings)
		L := math.Max(float64(S), maxPos)
		theta := cfg.Theta() * math.Pow(rs.Factor*L/maxPos-(rs.Factor-1), float64(D)/float64(D-2))
		f = plain(theta)
	case "llama3": // Llama 3.1 reference code (apply_scaling in Meta's model.py).
		old := float64(rs.OriginalMaxPositionEmbeddings)
		for j, v := range f {
			wavelen := 2 * math.Pi / v
			switch {
			case wavelen < old/rs.HighFreqFactor:
			case wavelen > old/rs.LowFreqFactor:
				f[j] = v / rs.Factor
			default:
				smooth := (old/wavelen - rs.LowFreqFactor) / (rs.HighFreqFactor - rs.LowFreqFactor)
				f[j] = (1-smooth)*v/rs.Factor + smooth*v
			}
		}
	case "yarn": // YaRN (Peng et al. 2023), as transformers implements it.
		orig := float64(rs.OriginalMaxPositionEmbeddings)
		if orig == 0 {
			orig = float64(cfg.MaxPositionEmbeddings)
		}
		corr := func(rot float64) float64 {
			return float64(D) * math.Log(orig/(rot*2*math.Pi)) / (2 * math.Log(cfg.Theta()))
		}
		fast, slow := 32.0, 1.0
		if rs.BetaFast != 0 {
			fast = rs.BetaFast
		}
		if rs.BetaSlow != 0 {
			slow = rs.BetaSlow
		}
		lo, hi := math.Max(math.Floor(corr(fast)), 0), math.Min(math.Ceil(corr(slow)), float64(D-1))
		if lo == hi {
			hi += 0.001
		}
		for j, v := range f {
			ramp := math.Min(math.Max((float64(j)-lo)/(hi-lo), 0), 1)
			f[j] = v/rs.Factor*ramp + v*(1-ramp)
		}
		scale := 1.0
		if rs.AttentionFactor != nil {
			scale = *rs.AttentionFactor
		} else if rs.Factor > 1 {
			scale = 0.1*math.Log(rs.Factor) + 1
		}
		return f, scale
	}
	return f, 1
}

func negate(x []float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = -v
	}
	return out
}

func TestReferenceMatchesNaiveTransformersMath(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 11)
			ref := mustReference(t, cfg, w)
			ids := tokens(7, cfg.VocabSize, 9)
			out, err := ref.Forward(Inputs{InputIDs: [][]int64{ids}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := naiveForward(cfg, w, ids)
			worst := 0.0
			for s := range ids {
				w32 := make([]float32, len(want[s]))
				for i, v := range want[s] {
					w32[i] = float32(v)
				}
				worst = max(worst, maxAbsDiff(out.At(0, s), w32))
				assertClose(t, fmt.Sprintf("position %d", s), out.At(0, s), w32, 1e-4)
			}
			t.Logf("%s: reference vs naive float64 forward: max |Δlogit| %.3g", name, worst)
		})
	}
}

func TestReferenceIncrementalMatchesFull(t *testing.T) {
	cfg := testConfigs(t)["qwen2_tied_bias"]
	w := mustRandom(t, cfg, 12)
	ref := mustReference(t, cfg, w)
	ids := tokens(10, cfg.VocabSize, 1)
	full, err := ref.Forward(Inputs{InputIDs: [][]int64{ids}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := ref.NewDecoder()
	logits, err := d.Append(ids[:4]...)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "prefill", logits, full.At(0, 3), 1e-5)
	for s := 4; s < len(ids); s++ {
		if logits, err = d.Append(ids[s]); err != nil {
			t.Fatal(err)
		}
		assertClose(t, fmt.Sprintf("step %d", s), logits, full.At(0, s), 1e-5)
	}
	if d.Len() != len(ids) {
		t.Errorf("decoder length %d", d.Len())
	}
	// Greedy continues exactly as repeated full forwards would.
	got, err := ref.Greedy(ids[:3], 4)
	if err != nil {
		t.Fatal(err)
	}
	seq := append([]int64(nil), ids[:3]...)
	for i := 0; i < 4; i++ {
		o, err := ref.Forward(Inputs{InputIDs: [][]int64{seq}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		next := int64(Argmax(o.At(0, len(seq)-1)))
		if got[i] != next {
			t.Fatalf("greedy step %d = %d, full forward says %d", i, got[i], next)
		}
		seq = append(seq, next)
	}
}

func TestReferenceLeftPaddingMatchesAlone(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	w := mustRandom(t, cfg, 13)
	ref := mustReference(t, cfg, w)
	seqs := [][]int64{tokens(2, cfg.VocabSize, 1), tokens(6, cfg.VocabSize, 2)}
	batch := leftPadded(seqs, 0)
	out, err := ref.Forward(batch, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertFinite(t, "padded logits", out.Logits)
	n := len(batch.InputIDs[0])
	for b, s := range seqs {
		alone, err := ref.Forward(Inputs{InputIDs: [][]int64{s}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for i := range s {
			assertClose(t, fmt.Sprintf("row %d pos %d", b, i), out.At(b, n-len(s)+i), alone.At(0, i), 1e-5)
		}
	}
}

func TestPositionIDsLikeGenerate(t *testing.T) {
	got := PositionIDs([][]int64{{0, 0, 1, 1, 1}, {1, 1, 1, 1, 1}}, 3)
	if fmt.Sprint(got) != "[[0 1 2] [2 3 4]]" {
		t.Fatalf("PositionIDs = %v", got)
	}
	got = PositionIDs([][]int64{{0, 0, 0, 1}}, 4)
	if fmt.Sprint(got) != "[[1 1 1 0]]" {
		t.Fatalf("PositionIDs with padding = %v", got)
	}
}

func TestForwardRejectsBadInputs(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	ref := mustReference(t, cfg, mustRandom(t, cfg, 1))
	bad := []Inputs{
		{},
		{InputIDs: [][]int64{{1, 2}, {3}}},
		{InputIDs: [][]int64{{int64(cfg.VocabSize)}}},
		{InputIDs: [][]int64{{1}}, AttentionMask: [][]int64{{1, 1}}},
	}
	for i, in := range bad {
		if _, err := ref.Forward(in, nil); err == nil {
			t.Errorf("case %d accepted", i)
		}
	}
}

// Each rope variant moves the logits of the same weights far past the
// agreement tolerance, so the agreement tests above would catch a variant
// that the graph or the reference silently built as plain RoPE.
func TestRopeVariantsChangeLogits(t *testing.T) {
	cfgs := testConfigs(t)
	w := mustRandom(t, cfgs["tiny"], 3)
	ids := tokens(9, cfgs["tiny"].VocabSize, 4)
	plain, err := mustReference(t, cfgs["tiny"], w).Forward(Inputs{InputIDs: [][]int64{ids}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"rope_linear", "rope_dynamic", "rope_llama3", "rope_yarn"} {
		out, err := mustReference(t, cfgs[name], w).Forward(Inputs{InputIDs: [][]int64{ids}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := maxAbsDiff(out.Logits, plain.Logits); d < 1e-2 {
			t.Errorf("%s: logits within %.2g of plain RoPE", name, d)
		}
	}
}
