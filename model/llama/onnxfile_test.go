package llama

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/advancedclimatesystems/gonnx/onnx"
	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/proto"
)

// The streamed encoding must be a valid protobuf that decodes to exactly the
// model Build assembles in memory.
func TestEncodeONNXDecodesToBuild(t *testing.T) {
	for name, cfg := range testConfigs(t) {
		t.Run(name, func(t *testing.T) {
			w := mustRandom(t, cfg, 3)
			var buf bytes.Buffer
			if err := EncodeONNX(&buf, cfg, w); err != nil {
				t.Fatal(err)
			}
			var got onnx.ModelProto
			if err := proto.Unmarshal(buf.Bytes(), &got); err != nil {
				t.Fatalf("streamed model does not parse: %v", err)
			}
			want, err := Build(cfg, w)
			if err != nil {
				t.Fatal(err)
			}
			if !proto.Equal(&got, want) {
				t.Fatal("streamed model differs from Build's")
			}
			if got.OpsetImport[0].Version < 17 {
				t.Errorf("opset %d", got.OpsetImport[0].Version)
			}
			in, out := ioNames(cfg)
			if names := got.Graph.InputNames(); len(names) != len(in) || names[0] != InputIDsName || names[3] != "past_key_values.0.key" {
				t.Errorf("inputs = %v", names)
			}
			if names := got.Graph.OutputNames(); len(names) != len(out) || names[0] != LogitsName || names[1] != "present.0.key" {
				t.Errorf("outputs = %v", names)
			}
		})
	}
}

func TestExternalDataModelRunsInORT(t *testing.T) {
	cfg := testConfigs(t)["tiny"]
	w := mustRandom(t, cfg, 4)
	dir := t.TempDir()
	path := filepath.Join(dir, "onnx", "model.onnx")
	ext, err := WriteONNX(path, cfg, w, ONNXOptions{External: ExternalAlways})
	if err != nil || !ext {
		t.Fatalf("WriteONNX external=%v err=%v", ext, err)
	}
	st, _ := os.Stat(path)
	data, err := os.Stat(filepath.Join(dir, "onnx", "model.onnx_data"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > 64<<10 || data.Size() < int64(cfg.NumParams())*4*9/10 {
		t.Fatalf("model.onnx %d bytes, data %d bytes for %d params", st.Size(), data.Size(), cfg.NumParams())
	}
	b, _ := os.ReadFile(path)
	var m onnx.ModelProto
	if err := proto.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, init := range m.Graph.Initializer {
		if init.DataLocation != onnx.TensorProto_EXTERNAL {
			continue
		}
		for _, kv := range init.ExternalData {
			if kv.Key == "offset" {
				if off, _ := strconv.ParseInt(kv.Value, 10, 64); off%externalAlign != 0 {
					t.Fatalf("%s at unaligned offset %d", init.Name, off)
				}
			}
		}
	}

	inline := newORTModel(t, cfg, w)
	fromFile := newORTSession(t, cfg, func(in, out []string, opts *ortgo.SessionOptions) (*ortgo.DynamicAdvancedSession, error) {
		return ortgo.NewDynamicAdvancedSession(path, in, out, opts)
	})
	in := Inputs{InputIDs: [][]int64{tokens(5, cfg.VocabSize, 1)}}
	assertClose(t, "external vs inline", fromFile.run(t, in, nil).Logits, inline.run(t, in, nil).Logits, 0)
}

func TestTransposeCat(t *testing.T) {
	// Two Linear weights [2,3] and [1,3] -> [3, 3] with columns (a0 a1 b0).
	a := []float32{1, 2, 3, 4, 5, 6}
	b := []float32{7, 8, 9}
	got := transposeCat(3, a, b)
	want := []float32{1, 4, 7, 2, 5, 8, 3, 6, 9}
	assertClose(t, "transposeCat", got, want, 0)
	big := make([]float32, 130*70)
	for i := range big {
		big[i] = float32(i)
	}
	tr := transposeCat(70, big)
	for r := 0; r < 130; r++ {
		for c := 0; c < 70; c++ {
			if tr[c*130+r] != big[r*70+c] {
				t.Fatalf("blocked transpose wrong at (%d,%d)", r, c)
			}
		}
	}
}

func TestEncodeONNXIsDeterministic(t *testing.T) {
	cfg := testConfigs(t)["qwen2_tied_bias"]
	w := mustRandom(t, cfg, 6)
	var a, b bytes.Buffer
	if err := EncodeONNX(&a, cfg, w); err != nil {
		t.Fatal(err)
	}
	if err := EncodeONNX(&b, cfg, w); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two encodings of the same model differ")
	}
}
