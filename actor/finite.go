package actor

import (
	"context"
	"fmt"
	"math"
)

// checkFinite refuses a policy whose logits are not finite: the weights of a
// diverged training run (NaN or infinite), which would sample garbage. It
// scores one probe (the token 0 after the token 0) at load: a NaN or
// infinite weight anywhere in a layer, the final norm or the head reaches
// every logit.
func (p *Policy) checkFinite(ctx context.Context) error {
	lp, err := p.Score(ctx, [][]int32{{0, 0}}, []int{1})
	if err != nil {
		return fmt.Errorf("load policy %s: probe forward: %w", p.dir, err)
	}
	for _, row := range lp {
		for _, v := range row {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("load policy %s: its logits are not finite (a probe token's logprob is %v): the weights hold NaN or infinite values, as a diverged training run leaves them; refused", p.dir, v)
			}
		}
	}
	return nil
}
