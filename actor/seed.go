package actor

import "math/rand/v2"

// SampleSeed derives the seed of one trajectory from the job's seed, the
// prompt's id and the sample's index within its group. The derivation is
// part of the data format: the same three values give the same seed in every
// version of toolrl. It is FNV-1a over the prompt id, then SplitMix64 mixing
// (Steele et al., "Fast splittable pseudorandom number generators", 2014) of
// the job seed, the hash and the index.
func SampleSeed(jobSeed uint64, promptID string, sampleIndex int) uint64 {
	const (
		fnvOffset = 14695981039346656037
		fnvPrime  = 1099511628211
	)
	h := uint64(fnvOffset)
	for i := 0; i < len(promptID); i++ {
		h ^= uint64(promptID[i])
		h *= fnvPrime
	}
	x := splitMix64(jobSeed)
	x = splitMix64(x ^ h)
	return splitMix64(x ^ uint64(sampleIndex))
}

// splitMix64 is SplitMix64's output function applied to x + golden gamma.
func splitMix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// trajectoryRNG is the random stream of one trajectory: PCG-DXSM from
// math/rand/v2, whose output sequence is fixed by its specification. Each
// sampled token consumes exactly one draw.
type trajectoryRNG struct{ pcg rand.PCG }

func newTrajectoryRNG(seed uint64) *trajectoryRNG {
	r := &trajectoryRNG{}
	r.pcg.Seed(seed, splitMix64(seed))
	return r
}

// uniform returns a float64 in [0, 1) with 53 random bits.
func (r *trajectoryRNG) uniform() float64 {
	return float64(r.pcg.Uint64()>>11) * (1.0 / (1 << 53))
}
