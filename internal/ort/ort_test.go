package ort_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/advancedclimatesystems/gonnx/onnx"
	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"

	"github.com/toolrl/toolrl/internal/ort"
	"github.com/toolrl/toolrl/internal/testsupport"
)

// concatModel is the shape of every KV-cache step: out = Concat(past, new)
// along axis 2, where past may have a zero-length dimension on the first step.
func concatModel(t *testing.T) []byte {
	t.Helper()
	dim := func(v int64) *onnx.TensorShapeProto_Dimension {
		return &onnx.TensorShapeProto_Dimension{Value: &onnx.TensorShapeProto_Dimension_DimValue{DimValue: v}}
	}
	sym := func(s string) *onnx.TensorShapeProto_Dimension {
		return &onnx.TensorShapeProto_Dimension{Value: &onnx.TensorShapeProto_Dimension_DimParam{DimParam: s}}
	}
	value := func(name string, dims ...*onnx.TensorShapeProto_Dimension) *onnx.ValueInfoProto {
		return &onnx.ValueInfoProto{Name: name, Type: &onnx.TypeProto{Value: &onnx.TypeProto_TensorType{
			TensorType: &onnx.TypeProto_Tensor{ElemType: int32(onnx.TensorProto_FLOAT), Shape: &onnx.TensorShapeProto{Dim: dims}},
		}}}
	}
	model := &onnx.ModelProto{
		IrVersion:    8,
		ProducerName: "toolrl-test",
		OpsetImport:  []*onnx.OperatorSetIdProto{{Domain: "", Version: 17}},
		Graph: &onnx.GraphProto{
			Name: "concat",
			Node: []*onnx.NodeProto{{
				OpType: "Concat", Input: []string{"past", "new"}, Output: []string{"present"},
				Attribute: []*onnx.AttributeProto{{Name: "axis", Type: onnx.AttributeProto_INT, I: 2}},
			}},
			Input:  []*onnx.ValueInfoProto{value("past", dim(1), dim(2), sym("P"), dim(4)), value("new", dim(1), dim(2), dim(1), dim(4))},
			Output: []*onnx.ValueInfoProto{value("present", dim(1), dim(2), sym("T"), dim(4))},
		},
	}
	data, err := proto.Marshal(model)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRunWithZeroLengthDimension(t *testing.T) {
	testsupport.RequireORT(t)
	if v := ort.Version(); !strings.HasPrefix(v, "1.") {
		t.Fatalf("Version() = %q, want 1.x", v)
	}
	session, err := ortgo.NewDynamicAdvancedSessionWithONNXData(concatModel(t), []string{"past", "new"}, []string{"present"}, nil)
	if err != nil {
		t.Fatalf("create session: %v", err)
	}
	defer session.Destroy()

	past, err := ortgo.NewTensor(ortgo.NewShape(1, 2, 0, 4), []float32{})
	if err != nil {
		t.Fatalf("zero-length tensor: %v", err)
	}
	defer past.Destroy()
	newData := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	step, _ := ortgo.NewTensor(ortgo.NewShape(1, 2, 1, 4), newData)
	defer step.Destroy()

	outputs := []ortgo.Value{nil}
	if err := session.Run([]ortgo.Value{past, step}, outputs); err != nil {
		t.Fatalf("run with P=0: %v", err)
	}
	present := outputs[0].(*ortgo.Tensor[float32])
	defer present.Destroy()
	if got := present.GetShape(); len(got) != 4 || got[2] != 1 {
		t.Fatalf("present shape %v, want [1 2 1 4]", got)
	}
	for i, v := range present.GetData() {
		if v != newData[i] {
			t.Fatalf("present[%d] = %v, want %v", i, v, newData[i])
		}
	}

	// Second step: the cache grows to P=2.
	outputs2 := []ortgo.Value{nil}
	if err := session.Run([]ortgo.Value{present, step}, outputs2); err != nil {
		t.Fatalf("run with P=1: %v", err)
	}
	defer outputs2[0].Destroy()
	if got := outputs2[0].(*ortgo.Tensor[float32]).GetShape(); got[2] != 2 {
		t.Fatalf("second present shape %v, want P=2", got)
	}
}

func TestLibraryPathHonoursEnv(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.so")
	t.Setenv(ort.EnvLibrary, missing)
	if _, err := ort.LibraryPath(); err == nil || !strings.Contains(err.Error(), ort.EnvLibrary) {
		t.Fatalf("LibraryPath with a missing %s = %v, want an error naming it", ort.EnvLibrary, err)
	}
	real := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(real, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ort.EnvLibrary, real)
	if got, err := ort.LibraryPath(); err != nil || got != real {
		t.Fatalf("LibraryPath = %q, %v; want %q", got, err, real)
	}
}

func TestMissingLibraryErrorSaysMakeSetup(t *testing.T) {
	if !strings.Contains(ort.ErrNotFound.Error(), "make setup") {
		t.Fatalf("ErrNotFound = %q, want it to tell the user to run make setup", ort.ErrNotFound)
	}
}
