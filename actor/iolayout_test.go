package actor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	ortgo "github.com/yalue/onnxruntime_go"
)

// optimumIO returns the inputs and outputs of an optimum export with the
// given number of layers and cache element type.
func optimumIO(layers int, kv ortgo.TensorElementDataType) (ins, outs []ortgo.InputOutputInfo) {
	t := func(name string, dt ortgo.TensorElementDataType, dims ...int64) ortgo.InputOutputInfo {
		return ortgo.InputOutputInfo{Name: name, OrtValueType: ortgo.ONNXTypeTensor, DataType: dt, Dimensions: dims}
	}
	i64 := ortgo.TensorElementDataType(ortgo.TensorElementDataTypeInt64)
	ins = []ortgo.InputOutputInfo{t("input_ids", i64, -1, -1), t("attention_mask", i64, -1, -1), t("position_ids", i64, -1, -1)}
	outs = []ortgo.InputOutputInfo{t("logits", ortgo.TensorElementDataTypeFloat, -1, -1, 320)}
	for i := 0; i < layers; i++ {
		ins = append(ins, t(fmt.Sprintf("past_key_values.%d.key", i), kv, -1, 2, -1, 16), t(fmt.Sprintf("past_key_values.%d.value", i), kv, -1, 2, -1, 16))
		outs = append(outs, t(fmt.Sprintf("present.%d.key", i), kv, -1, 2, -1, 16), t(fmt.Sprintf("present.%d.value", i), kv, -1, 2, -1, 16))
	}
	return ins, outs
}

func TestDiscoverIO(t *testing.T) {
	ins, outs := optimumIO(3, ortgo.TensorElementDataTypeFloat16)
	l, err := discoverIO(ins, outs, false)
	if err != nil {
		t.Fatal(err)
	}
	if l.layers != 3 || l.kvHeads != 2 || l.headDim != 16 || l.vocab != 320 || l.kvElem != 2 || !l.hasPositionIDs || l.hasUseCacheBranch {
		t.Fatalf("layout %+v", l)
	}
	if got := strings.Join(l.inputNames, ","); !strings.HasPrefix(got, "input_ids,attention_mask,position_ids,past_key_values.0.key,past_key_values.0.value,past_key_values.1.key") {
		t.Fatalf("input order %s", got)
	}

	// Each mismatch names the input or output at fault.
	for _, c := range []struct {
		name   string
		mutate func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo)
		want   string
	}{
		{"int32 ids", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			ins[0].DataType = ortgo.TensorElementDataTypeInt32
			return ins, outs
		}, `"input_ids"`},
		{"unknown input", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return append(ins, ortgo.InputOutputInfo{Name: "token_type_ids", OrtValueType: ortgo.ONNXTypeTensor}), outs
		}, `"token_type_ids"`},
		{"mixed cache types", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			ins[6].DataType = ortgo.TensorElementDataTypeFloat
			return ins, outs
		}, `"past_key_values.1.value"`},
		{"missing layer", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return append(ins[:5:5], ins[7:]...), outs
		}, "past_key_values.1"},
		{"missing mask", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return append(ins[:1:1], ins[2:]...), outs
		}, `"attention_mask"`},
		{"missing positions", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return append(ins[:2:2], ins[3:]...), outs
		}, `"position_ids"`},
		{"symbolic head dim", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			ins[3].Dimensions = []int64{-1, 2, -1, -1}
			return ins, outs
		}, `"past_key_values.0.key"`},
		{"missing present", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return ins, outs[:len(outs)-1]
		}, `"present.2.value"`},
		{"no cache", func(ins, outs []ortgo.InputOutputInfo) ([]ortgo.InputOutputInfo, []ortgo.InputOutputInfo) {
			return ins[:3], outs[:1]
		}, "past_key_values.0.key"},
	} {
		ins, outs := optimumIO(3, ortgo.TensorElementDataTypeFloat16)
		mi, mo := c.mutate(ins, outs)
		_, err := discoverIO(mi, mo, false)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
		}
	}
}

func TestHalfToFloat(t *testing.T) {
	for _, c := range []struct {
		bits uint16
		want float32
	}{{0x3c00, 1}, {0xc000, -2}, {0x3555, 0.333251953125}, {0x0001, 5.960464477539063e-08}, {0x7bff, 65504}, {0x8000, 0}} {
		if got := f16(c.bits); got != c.want {
			t.Errorf("f16(%#04x) = %v, want %v", c.bits, got, c.want)
		}
	}
}

// TestCUDAUnavailable: asking for CUDA from a library built without it is
// an error that names the missing execution provider.
func TestCUDAUnavailable(t *testing.T) {
	dir, _ := tinyModel(t, 1)
	pol, err := Load(context.Background(), LoadOptions{Dir: dir, Provider: "cuda"})
	if err == nil {
		pol.Close()
		t.Skip("this ONNX Runtime has CUDA: the missing-provider error cannot be exercised")
	}
	if !strings.Contains(err.Error(), "CUDAExecutionProvider") {
		t.Fatalf("error %q does not name CUDAExecutionProvider", err)
	}
	if _, err := Load(context.Background(), LoadOptions{Dir: dir, Provider: "tpu"}); err == nil || !strings.Contains(err.Error(), "tpu") {
		t.Fatalf("unknown provider: %v", err)
	}
}

// TestReadGraphIO: the protobuf walk sees what ONNX Runtime sees.
func TestReadGraphIO(t *testing.T) {
	dir, _ := tinyModel(t, 1)
	path := dir + "/onnx/model.onnx"
	ins, outs, err := readGraphIO(path)
	if err != nil {
		t.Fatal(err)
	}
	wantIns, wantOuts, err := ortgo.GetInputOutputInfo(path)
	if err != nil {
		t.Fatal(err)
	}
	show := func(v []ortgo.InputOutputInfo) string {
		var parts []string
		for _, x := range v {
			parts = append(parts, x.String())
		}
		return strings.Join(parts, "\n")
	}
	if show(ins) != show(wantIns) || show(outs) != show(wantOuts) {
		t.Fatalf("inputs:\n%s\nwant:\n%s\noutputs:\n%s\nwant:\n%s", show(ins), show(wantIns), show(outs), show(wantOuts))
	}
	if _, _, err := readGraphIO(dir + "/config.json"); err == nil {
		t.Error("a JSON file read as an ONNX graph")
	}
}
