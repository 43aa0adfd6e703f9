package learner

import (
	"fmt"

	"github.com/toolrl/toolrl/model/llama"
)

// WriteQuantized writes the learner's current weights into dir as a model
// folder for actors, quantized as base.RolloutQuantization: config.json (which
// records the quantization under llama.QuantizationKey, so trajectories
// sampled with it name it), the base's tokenizer and other files, and
// onnx/model.onnx with MatMulNBits layers. It writes no safetensors: the
// learner never reads this form back (Resume reads the version's float32
// model.safetensors). Publish calls it for every version; the training loop
// calls it once for version 0, the base model.
func (l *Learner) WriteQuantized(dir string, base Base) error {
	q := base.RolloutQuantization
	if !q.Enabled() {
		return fmt.Errorf("learner: write quantized copy %s: no rollout quantization set", dir)
	}
	if err := q.Validate(); err != nil {
		return fmt.Errorf("learner: write quantized copy %s: %w", dir, err)
	}
	spec := l.folderSpec(base)
	spec.ONNX.Quantize = q
	if _, err := llama.WriteFolder(dir, spec); err != nil {
		return fmt.Errorf("learner: write quantized copy %s: %w", dir, err)
	}
	return nil
}
