package actor

import (
	"testing"

	ortgo "github.com/yalue/onnxruntime_go"
)

// TestKVTensorNilOnError: a kvTensor that fails (here: a negative
// dimension, or ORT not initialised) returns a nil Value, not a nil
// *CustomDataTensor wrapped in one, which a caller's Destroy would panic on.
func TestKVTensorNilOnError(t *testing.T) {
	v, err := kvTensor(ortgo.NewShape(-1, 2), nil, ortgo.TensorElementDataTypeFloat)
	if err == nil || v != nil {
		t.Fatalf("kvTensor(bad shape) = %#v, %v; want nil, an error", v, err)
	}
}
