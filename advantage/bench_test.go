package advantage

import (
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
)

// BenchmarkCompute is Compute (hybrid, k3 KL) on the service benchmark's
// group: 8 trajectories of 288 tokens, 256 of them response.
func BenchmarkCompute(b *testing.B) {
	g := trajtest.Synthetic("bench", 1, 8, 64)
	cfg := plainGRPO()
	cfg.Mode, cfg.KL = ModeHybrid, KLK3
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, _, err := Compute(g, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
