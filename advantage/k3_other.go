//go:build !amd64

package advantage

import "github.com/toolrl/toolrl/traj"

// tokenK3 is tokenKL for k3: kl[j] = float32(klK3(logp[j], ref[j])) where
// mask[j] is 1 and 0 elsewhere.
func tokenK3(kl, logp, ref []float32, mask traj.Mask) { tokenK3Scalar(kl, logp, ref, mask) }
