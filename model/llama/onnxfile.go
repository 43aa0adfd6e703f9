package llama

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"github.com/advancedclimatesystems/gonnx/onnx"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// ExternalMode says where an ONNX file keeps its weights.
type ExternalMode int

const (
	// ExternalAuto keeps weights inside model.onnx unless they pass
	// InlineLimit bytes, the most a protobuf file can safely hold.
	ExternalAuto ExternalMode = iota
	// ExternalAlways writes every large weight to the data file.
	ExternalAlways
	// ExternalNever keeps weights inline and fails past the protobuf limit.
	ExternalNever
)

// InlineLimit is the largest total initializer size kept inside model.onnx
// (protobuf messages are limited to 2 GiB; the margin leaves room for the
// graph itself).
const InlineLimit int64 = 2<<30 - 64<<20

// externalMinBytes: initializers smaller than this stay inline even in
// external mode (shape constants and the like), as onnx's own saver does.
const externalMinBytes = 1024

// externalAlign aligns each tensor in the data file, so that ORT can map it
// without copying.
const externalAlign = 4096

// ONNXOptions tunes WriteONNX.
type ONNXOptions struct {
	External ExternalMode
	// DataFile is the external data file's name, next to the model;
	// default "model.onnx_data" (the name transformers.js and optimum use).
	DataFile string
	// Quantize writes the linear layers as MatMulNBits (see Quantization);
	// the zero value writes float32.
	Quantize Quantization
	// Float16 writes weights, activations and the key/value cache in
	// float16, with norms, softmax and RoPE tables in float32 and float32
	// logits (see castToFloat16). It cannot be combined with Quantize.
	Float16 bool
	// Fused writes the fused-operator graph onnxruntime-genai's builder
	// emits (GroupQueryAttention over a preallocated key/value buffer,
	// SkipSimplifiedLayerNormalization; see buildFusedGraph) instead of
	// optimum's layout of plain operators. It works with Quantize, not
	// with Float16, and not for every config (FusedSupported).
	Fused bool
	// Progress, when set, is called after each initializer is written.
	Progress func(Progress)
}

// Progress says how far a long step (reading a checkpoint, writing a
// model) has come: Tensors of TotalTensors tensors, Bytes of TotalBytes
// bytes. Name is the tensor just done.
type Progress struct {
	Step                  string // "read" or "write"
	Name                  string
	Tensors, TotalTensors int
	Bytes, TotalBytes     int64
}

// writeProgress counts initializers as they are written (a nil one counts
// nothing).
type writeProgress struct {
	fn func(Progress)
	p  Progress
}

func newWriteProgress(fn func(Progress), inits []*initializer) *writeProgress {
	if fn == nil {
		return nil
	}
	wp := &writeProgress{fn: fn, p: Progress{Step: "write", TotalTensors: len(inits)}}
	for _, in := range inits {
		wp.p.TotalBytes += in.numBytes()
	}
	return wp
}

func (wp *writeProgress) wrote(in *initializer) {
	if wp == nil {
		return
	}
	wp.p.Name = in.name
	wp.p.Tensors++
	wp.p.Bytes += in.numBytes()
	wp.fn(wp.p)
}

// graphFor lays out the graph opts ask for: buildGraph's, rewritten to
// float16 when opts.Float16 is set.
func graphFor(cfg Config, w Weights, opts ONNXOptions) (*onnx.GraphProto, []*initializer, error) {
	if opts.Float16 && opts.Quantize.Enabled() {
		return nil, nil, fmt.Errorf("onnx: float16 with %s quantization is not supported (quantize a float32 graph)", opts.Quantize)
	}
	if opts.Fused {
		if opts.Float16 {
			return nil, nil, fmt.Errorf("onnx: the fused graph is float32 or quantized; float16 is not supported")
		}
		return buildFusedGraph(cfg, w, opts.Quantize)
	}
	gp, inits, err := buildGraph(cfg, w, opts.Quantize)
	if err != nil || !opts.Float16 {
		return gp, inits, err
	}
	inits, err = castToFloat16(gp, inits)
	return gp, inits, err
}

// modelHeader returns the model fields around gp, importing ONNX Runtime's
// contrib domain when a node of gp uses it.
func modelHeader(gp *onnx.GraphProto) *onnx.ModelProto {
	m := &onnx.ModelProto{
		IrVersion:    irVersion,
		OpsetImport:  []*onnx.OperatorSetIdProto{{Domain: "", Version: Opset}},
		ProducerName: "toolrl",
		DocString:    "Llama-family decoder built by github.com/toolrl/toolrl/model/llama",
	}
	for _, n := range gp.Node {
		if n.Domain == msDomain {
			m.OpsetImport = append(m.OpsetImport, &onnx.OperatorSetIdProto{Domain: msDomain, Version: 1})
			break
		}
	}
	return m
}

// Build returns the ONNX model for cfg and w with every weight inline. It
// holds the whole model in memory; WriteONNX streams large models to disk.
func Build(cfg Config, w Weights) (*onnx.ModelProto, error) {
	gp, inits, err := buildGraph(cfg, w, Quantization{})
	if err != nil {
		return nil, err
	}
	var total int64
	for _, in := range inits {
		total += in.numBytes()
		raw := make([]byte, 0, in.numBytes())
		raw = appendData(raw, in)
		gp.Initializer = append(gp.Initializer, &onnx.TensorProto{Name: in.name, Dims: in.dims, DataType: int32(in.dtype), RawData: raw})
	}
	if total > InlineLimit {
		return nil, fmt.Errorf("onnx: %d bytes of weights do not fit an inline model; use WriteONNX", total)
	}
	m := modelHeader(gp)
	m.Graph = gp
	return m, nil
}

func appendData(dst []byte, in *initializer) []byte {
	if in.dtype == onnx.TensorProto_UINT8 || in.dtype == onnx.TensorProto_FLOAT16 {
		return append(dst, in.u8()...)
	}
	if in.dtype == onnx.TensorProto_INT64 {
		for _, v := range in.i64 {
			dst = binary.LittleEndian.AppendUint64(dst, uint64(v))
		}
		return dst
	}
	for _, v := range in.f32() {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(v))
	}
	return dst
}

// writeData streams in's bytes to w in bounded chunks.
func writeData(w io.Writer, in *initializer) error {
	if in.dtype == onnx.TensorProto_UINT8 || in.dtype == onnx.TensorProto_FLOAT16 {
		data := in.u8()
		if int64(len(data)) != in.numBytes() {
			return fmt.Errorf("onnx: initializer %s: %d bytes for dims %v", in.name, len(data), in.dims)
		}
		_, err := w.Write(data)
		return err
	}
	if in.dtype == onnx.TensorProto_INT64 {
		_, err := w.Write(appendData(nil, in))
		return err
	}
	data := in.f32()
	if int64(len(data))*4 != in.numBytes() {
		return fmt.Errorf("onnx: initializer %s: %d values for dims %v", in.name, len(data), in.dims)
	}
	const chunk = 1 << 16
	buf := make([]byte, 0, 4*chunk)
	for i := 0; i < len(data); i += chunk {
		buf = buf[:0]
		for _, v := range data[i:min(i+chunk, len(data))] {
			buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
	}
	return nil
}

// EncodeONNX streams the inline model (the same bytes as marshaling Build's
// result) to w, computing each weight only when it is written.
func EncodeONNX(w io.Writer, cfg Config, weights Weights) error {
	return EncodeQuantizedONNX(w, cfg, weights, Quantization{})
}

// EncodeQuantizedONNX is EncodeONNX with the linear layers quantized as q
// says (float32 for the zero value).
func EncodeQuantizedONNX(w io.Writer, cfg Config, weights Weights, q Quantization) error {
	gp, inits, err := buildGraph(cfg, weights, q)
	if err != nil {
		return err
	}
	var total int64
	for _, in := range inits {
		total += in.numBytes()
	}
	if total > InlineLimit {
		return fmt.Errorf("onnx: %d bytes of weights do not fit an inline model; write with external data", total)
	}
	return encode(w, gp, inits, nil, nil)
}

// encode writes the model protobuf. Field order does not matter in protobuf,
// so the graph is written as its small marshaled part followed by one
// initializer record per weight, whose raw_data is streamed. When ext is
// non-nil, initializers it names are written as external references instead.
func encode(w io.Writer, gp *onnx.GraphProto, inits []*initializer, ext map[string]*onnx.TensorProto, wp *writeProgress) error {
	opts := proto.MarshalOptions{Deterministic: true}
	graphHead, err := opts.Marshal(gp)
	if err != nil {
		return fmt.Errorf("onnx: marshal graph: %w", err)
	}
	recs := make([]tensorRecord, len(inits))
	graphLen := int64(len(graphHead))
	for i, in := range inits {
		if t, ok := ext[in.name]; ok {
			b, err := opts.Marshal(t)
			if err != nil {
				return fmt.Errorf("onnx: marshal %s: %w", in.name, err)
			}
			recs[i] = tensorRecord{head: b, raw: -1}
		} else {
			b, err := opts.Marshal(&onnx.TensorProto{Name: in.name, Dims: in.dims, DataType: int32(in.dtype)})
			if err != nil {
				return fmt.Errorf("onnx: marshal %s: %w", in.name, err)
			}
			recs[i] = tensorRecord{head: b, raw: in.numBytes()}
		}
		graphLen += int64(protowire.SizeTag(5)) + int64(protowire.SizeVarint(uint64(recs[i].msgLen())))
		graphLen += recs[i].msgLen()
	}
	modelHead, err := opts.Marshal(modelHeader(gp))
	if err != nil {
		return fmt.Errorf("onnx: marshal model: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var pre []byte
	pre = append(pre, modelHead...)
	pre = protowire.AppendTag(pre, 7, protowire.BytesType) // ModelProto.graph
	pre = protowire.AppendVarint(pre, uint64(graphLen))
	pre = append(pre, graphHead...)
	if _, err := bw.Write(pre); err != nil {
		return fmt.Errorf("onnx: write: %w", err)
	}
	for i, in := range inits {
		r := recs[i]
		var b []byte
		b = protowire.AppendTag(b, 5, protowire.BytesType) // GraphProto.initializer
		b = protowire.AppendVarint(b, uint64(r.msgLen()))
		b = append(b, r.head...)
		if r.raw >= 0 {
			b = protowire.AppendTag(b, 9, protowire.BytesType) // TensorProto.raw_data
			b = protowire.AppendVarint(b, uint64(r.raw))
		}
		if _, err := bw.Write(b); err != nil {
			return fmt.Errorf("onnx: write: %w", err)
		}
		if r.raw >= 0 {
			if err := writeData(bw, in); err != nil {
				return fmt.Errorf("onnx: write %s: %w", in.name, err)
			}
			wp.wrote(in)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("onnx: write: %w", err)
	}
	return nil
}

// tensorRecord is one initializer as encode writes it.
type tensorRecord struct {
	head []byte // tensor fields other than raw_data (or the whole external tensor)
	raw  int64  // raw_data length, -1 when external
}

// msgLen is the encoded TensorProto's length.
func (r tensorRecord) msgLen() int64 {
	n := int64(len(r.head))
	if r.raw >= 0 {
		n += int64(protowire.SizeTag(9)) + int64(protowire.SizeVarint(uint64(r.raw))) + r.raw
	}
	return n
}

// WriteONNX writes the model to path. With external data (see ONNXOptions)
// large weights go to a data file next to path. It reports whether it wrote
// external data.
func WriteONNX(path string, cfg Config, w Weights, opts ONNXOptions) (external bool, err error) {
	gp, inits, err := graphFor(cfg, w, opts)
	if err != nil {
		return false, err
	}
	var total int64
	for _, in := range inits {
		total += in.numBytes()
	}
	switch opts.External {
	case ExternalAlways:
		external = true
	case ExternalNever:
		if total > InlineLimit {
			return false, fmt.Errorf("onnx: %d bytes of weights do not fit an inline model", total)
		}
	default:
		external = total > InlineLimit
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return false, fmt.Errorf("onnx: %w", err)
	}
	wp := newWriteProgress(opts.Progress, inits)
	var ext map[string]*onnx.TensorProto
	if external {
		name := opts.DataFile
		if name == "" {
			name = "model.onnx_data"
		}
		ext, err = writeExternal(filepath.Join(filepath.Dir(path), name), name, inits, wp)
		if err != nil {
			return false, err
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return false, fmt.Errorf("onnx: %w", err)
	}
	if err := encode(f, gp, inits, ext, wp); err != nil {
		f.Close()
		return false, fmt.Errorf("%w (writing %s)", err, path)
	}
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("onnx: close %s: %w", path, err)
	}
	return external, nil
}

// writeExternal writes every initializer of at least externalMinBytes to
// dataPath and returns the tensor protos that reference it.
func writeExternal(dataPath, location string, inits []*initializer, wp *writeProgress) (map[string]*onnx.TensorProto, error) {
	f, err := os.Create(dataPath)
	if err != nil {
		return nil, fmt.Errorf("onnx: %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	ext := map[string]*onnx.TensorProto{}
	var off int64
	for _, in := range inits {
		n := in.numBytes()
		if n < externalMinBytes {
			continue
		}
		if pad := (externalAlign - off%externalAlign) % externalAlign; pad > 0 {
			if _, err := bw.Write(make([]byte, pad)); err != nil {
				f.Close()
				return nil, fmt.Errorf("onnx: write %s: %w", dataPath, err)
			}
			off += pad
		}
		if err := writeData(bw, in); err != nil {
			f.Close()
			return nil, fmt.Errorf("onnx: write %s to %s: %w", in.name, dataPath, err)
		}
		wp.wrote(in)
		ext[in.name] = &onnx.TensorProto{
			Name: in.name, Dims: in.dims, DataType: int32(in.dtype),
			DataLocation: onnx.TensorProto_EXTERNAL,
			ExternalData: []*onnx.StringStringEntryProto{
				{Key: "location", Value: location},
				{Key: "offset", Value: strconv.FormatInt(off, 10)},
				{Key: "length", Value: strconv.FormatInt(n, 10)},
			},
		}
		off += n
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return nil, fmt.Errorf("onnx: write %s: %w", dataPath, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("onnx: close %s: %w", dataPath, err)
	}
	return ext, nil
}
