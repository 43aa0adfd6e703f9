package actor

import (
	"errors"
	"fmt"
	"io"
	"os"

	ortgo "github.com/yalue/onnxruntime_go"
	"google.golang.org/protobuf/encoding/protowire"
)

// readGraphIO reads the inputs and outputs declared by an ONNX file's graph
// without loading its weights: it walks the protobuf encoding of ModelProto
// and seeks past initializer data, so discovering a 500 MB model's interface
// costs a few reads instead of a second ONNX Runtime session. Inputs that
// are initializers (old IR versions list them) are dropped.
func readGraphIO(path string) (ins, outs []ortgo.InputOutputInfo, err error) {
	ins, outs, _, err = readGraphIOOps(path)
	return ins, outs, err
}

// readGraphIOOps is readGraphIO that also returns the operator types of the
// graph's nodes (NodeProto.op_type), as a set.
func readGraphIOOps(path string) (ins, outs []ortgo.InputOutputInfo, ops map[string]bool, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, nil, nil, err
	}
	r := &pbReader{f: f}
	// ModelProto.graph is field 7.
	for r.tell() < st.Size() {
		num, typ, err := r.tag()
		if err != nil {
			return nil, nil, nil, err
		}
		if num == 7 && typ == protowire.BytesType {
			n, err := r.varint()
			if err != nil {
				return nil, nil, nil, err
			}
			return readGraph(r, r.tell()+int64(n))
		}
		if err := r.skipField(typ); err != nil {
			return nil, nil, nil, err
		}
	}
	return nil, nil, nil, errors.New("no graph in the model")
}

// readGraph reads GraphProto fields up to end: input (11), output (12),
// the names of initializers (5) and the op types of nodes (1).
func readGraph(r *pbReader, end int64) (ins, outs []ortgo.InputOutputInfo, ops map[string]bool, err error) {
	inits := map[string]bool{}
	ops = map[string]bool{}
	for r.tell() < end {
		num, typ, err := r.tag()
		if err != nil {
			return nil, nil, nil, err
		}
		if typ != protowire.BytesType || (num != 1 && num != 5 && num != 11 && num != 12) {
			if err := r.skipField(typ); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		n, err := r.varint()
		if err != nil {
			return nil, nil, nil, err
		}
		if num == 1 {
			b, err := r.bytes(int(n))
			if err != nil {
				return nil, nil, nil, err
			}
			// NodeProto.op_type is field 4.
			if err := eachField(b, func(num protowire.Number, v []byte, _ uint64) error {
				if num == 4 {
					ops[string(v)] = true
				}
				return nil
			}); err != nil {
				return nil, nil, nil, err
			}
			continue
		}
		if num == 5 {
			name, err := readTensorName(r, r.tell()+int64(n))
			if err != nil {
				return nil, nil, nil, err
			}
			inits[name] = true
			continue
		}
		b, err := r.bytes(int(n))
		if err != nil {
			return nil, nil, nil, err
		}
		info, err := parseValueInfo(b)
		if err != nil {
			return nil, nil, nil, err
		}
		if num == 11 {
			ins = append(ins, info)
		} else {
			outs = append(outs, info)
		}
	}
	kept := ins[:0]
	for _, in := range ins {
		if !inits[in.Name] {
			kept = append(kept, in)
		}
	}
	return kept, outs, ops, nil
}

// readTensorName reads TensorProto.name (field 8) and skips the rest.
func readTensorName(r *pbReader, end int64) (string, error) {
	var name string
	for r.tell() < end {
		num, typ, err := r.tag()
		if err != nil {
			return "", err
		}
		if num == 8 && typ == protowire.BytesType {
			n, err := r.varint()
			if err != nil {
				return "", err
			}
			b, err := r.bytes(int(n))
			if err != nil {
				return "", err
			}
			name = string(b)
			continue
		}
		if err := r.skipField(typ); err != nil {
			return "", err
		}
	}
	return name, nil
}

// parseValueInfo decodes a ValueInfoProto: name (1) and a tensor type
// (TypeProto.tensor_type = 1: elem_type 1, shape 2 with dims 1: dim_value
// 1 or dim_param 2, which reads as -1 like ONNX Runtime reports it).
func parseValueInfo(b []byte) (ortgo.InputOutputInfo, error) {
	var info ortgo.InputOutputInfo
	err := eachField(b, func(num protowire.Number, v []byte, x uint64) error {
		switch num {
		case 1:
			info.Name = string(v)
		case 2: // TypeProto
			return eachField(v, func(num protowire.Number, v []byte, _ uint64) error {
				if num != 1 || v == nil { // only tensor types
					return nil
				}
				info.OrtValueType = ortgo.ONNXTypeTensor
				return eachField(v, func(num protowire.Number, v []byte, x uint64) error {
					switch num {
					case 1:
						info.DataType = ortgo.TensorElementDataType(x)
					case 2:
						info.Dimensions = ortgo.Shape{}
						return eachField(v, func(num protowire.Number, v []byte, _ uint64) error {
							if num != 1 {
								return nil
							}
							d := int64(-1)
							err := eachField(v, func(num protowire.Number, _ []byte, x uint64) error {
								if num == 1 {
									d = int64(x)
								}
								return nil
							})
							info.Dimensions = append(info.Dimensions, d)
							return err
						})
					}
					return nil
				})
			})
		}
		return nil
	})
	if info.Name == "" && err == nil {
		err = errors.New("value info without a name")
	}
	return info, err
}

// eachField calls fn for every field of a message: v for length-delimited
// fields (nil otherwise), x for varints.
func eachField(b []byte, fn func(num protowire.Number, v []byte, x uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		var x uint64
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
			if v == nil && n >= 0 {
				v = []byte{}
			}
		case protowire.VarintType:
			x, n = protowire.ConsumeVarint(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := fn(num, v, x); err != nil {
			return err
		}
	}
	return nil
}

// pbReader reads protobuf fields from a file, seeking past long ones.
type pbReader struct {
	f   *os.File
	buf []byte
	off int64 // file offset of buf[0]
	pos int   // read position in buf
}

func (r *pbReader) tell() int64 { return r.off + int64(r.pos) }

// fill makes at least n unread bytes available (fewer at end of file).
func (r *pbReader) fill(n int) error {
	if len(r.buf)-r.pos >= n {
		return nil
	}
	rest := copy(r.buf, r.buf[r.pos:])
	r.off += int64(r.pos)
	r.pos = 0
	size := max(n, 64<<10)
	if cap(r.buf) < size {
		nb := make([]byte, size)
		copy(nb, r.buf[:rest])
		r.buf = nb
	}
	r.buf = r.buf[:cap(r.buf)]
	m, err := r.f.ReadAt(r.buf[rest:], r.off+int64(rest))
	r.buf = r.buf[:rest+m]
	if err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func (r *pbReader) varint() (uint64, error) {
	if err := r.fill(binaryMaxVarint); err != nil {
		return 0, err
	}
	x, n := protowire.ConsumeVarint(r.buf[r.pos:])
	if n < 0 {
		return 0, fmt.Errorf("at byte %d: %w", r.tell(), protowire.ParseError(n))
	}
	r.pos += n
	return x, nil
}

const binaryMaxVarint = 10

func (r *pbReader) tag() (protowire.Number, protowire.Type, error) {
	x, err := r.varint()
	if err != nil {
		return 0, 0, err
	}
	num, typ := protowire.DecodeTag(x)
	if num <= 0 {
		return 0, 0, fmt.Errorf("at byte %d: invalid field number", r.tell())
	}
	return num, typ, nil
}

func (r *pbReader) bytes(n int) ([]byte, error) {
	if err := r.fill(n); err != nil {
		return nil, err
	}
	if len(r.buf)-r.pos < n {
		return nil, fmt.Errorf("at byte %d: truncated field", r.tell())
	}
	b := r.buf[r.pos : r.pos+n]
	r.pos += n
	return b, nil
}

// skip moves n bytes forward, dropping the buffer when they pass its end.
func (r *pbReader) skip(n int64) {
	if int64(len(r.buf)-r.pos) >= n {
		r.pos += int(n)
		return
	}
	r.off = r.tell() + n
	r.buf, r.pos = r.buf[:0], 0
}

func (r *pbReader) skipField(typ protowire.Type) error {
	switch typ {
	case protowire.VarintType:
		_, err := r.varint()
		return err
	case protowire.Fixed32Type:
		r.skip(4)
	case protowire.Fixed64Type:
		r.skip(8)
	case protowire.BytesType:
		n, err := r.varint()
		if err != nil {
			return err
		}
		r.skip(int64(n))
	default:
		return fmt.Errorf("at byte %d: unsupported wire type %d", r.tell(), typ)
	}
	return nil
}
