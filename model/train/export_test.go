package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteFolderRefusesWhatConfigCannotSay: a feature combination that no
// config.json expresses (it would load back as another architecture) is
// refused before anything is written.
func TestWriteFolderRefusesWhatConfigCannotSay(t *testing.T) {
	qkvOnly := tinyConfig() // llama: attention_bias puts biases on q, k, v and o alike
	qkvOnly.QKVBias = true
	qwen2O := tinyConfig()
	qwen2O.ModelType, qwen2O.QKVBias, qwen2O.OBias = "qwen2", true, true
	normLlama := tinyConfig()
	normLlama.QKNorm = true
	qwen3NoNorm := tinyConfig()
	qwen3NoNorm.ModelType = "qwen3"
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"llama q/k/v bias without o bias": {qkvOnly, "o bias"},
		"qwen2 with o bias":               {qwen2O, "o bias"},
		"llama with q/k norm":             {normLlama, "q/k norm"},
		"qwen3 without q/k norm":          {qwen3NoNorm, "q/k norm"},
	} {
		m := tinyModelWith(t, c.cfg)
		dir := filepath.Join(t.TempDir(), "m")
		err := m.WriteFolder(dir, 12, 12, 12, FolderFiles{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), dir) {
			t.Errorf("%s: error %v, want one naming %s and the folder", name, err, c.want)
		}
		if _, serr := os.Stat(dir); !os.IsNotExist(serr) {
			t.Errorf("%s: %s exists after the refusal", name, dir)
		}
	}
}
