package llama

import (
	"math/rand/v2"
	"strings"
)

// RandomWeights returns seeded random weights for cfg: Linear and embedding
// weights ~ N(0, initializer_range²) (0.02 when unset), biases ~ N(0, 0.02²),
// and RMSNorm weights 1 + N(0, 0.1²) so that a wrong norm scale shows up in
// parity tests. The same (cfg, seed) always gives the same weights.
func RandomWeights(cfg Config, seed uint64) (Weights, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	std := cfg.InitializerRange
	if std == 0 {
		std = 0.02
	}
	names, shapes := cfg.Spec()
	w := make(Weights, len(names))
	for i, n := range names {
		// One stream per tensor: a tensor's values do not depend on the
		// tensors before it, so changing one shape leaves the rest alone.
		rng := rand.New(rand.NewPCG(seed, uint64(i)+1))
		data := make([]float32, numel(shapes[n]))
		switch {
		case strings.HasSuffix(n, "norm.weight"):
			for j := range data {
				data[j] = float32(1 + 0.1*rng.NormFloat64())
			}
		case strings.HasSuffix(n, ".bias"):
			for j := range data {
				data[j] = float32(0.02 * rng.NormFloat64())
			}
		default:
			for j := range data {
				data[j] = float32(std * rng.NormFloat64())
			}
		}
		w[n] = Tensor{Shape: append([]int(nil), shapes[n]...), Data: data}
	}
	return w, nil
}
