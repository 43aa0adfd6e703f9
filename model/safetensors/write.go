package safetensors

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Tensor is a float32 tensor to write. Data is row-major and holds exactly
// the product of Shape elements.
type Tensor struct {
	Name  string
	Shape []int64
	Data  []float32
}

func (t Tensor) check() error {
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("safetensors: tensor %q: negative dimension in shape %v", t.Name, t.Shape)
		}
		n *= d
	}
	if n != int64(len(t.Data)) {
		return fmt.Errorf("safetensors: tensor %q: shape %v has %d elements, data has %d", t.Name, t.Shape, n, len(t.Data))
	}
	return nil
}

// Write writes tensors as one safetensors stream, in the given order,
// converting float32 data to dtype (F32, F16 or BF16). Metadata may be nil.
// The header is padded with spaces to a multiple of 8 bytes, as the reference
// implementation does, so that data offsets stay aligned.
func Write(w io.Writer, tensors []Tensor, dtype DType, metadata map[string]string) error {
	sz := int64(dtype.Size())
	if dtype != F32 && dtype != F16 && dtype != BF16 {
		return fmt.Errorf("safetensors: cannot write dtype %q (want F32, F16 or BF16)", dtype)
	}
	hdr := make(map[string]any, len(tensors)+1)
	if len(metadata) > 0 {
		hdr["__metadata__"] = metadata
	}
	var off int64
	for _, t := range tensors {
		if err := t.check(); err != nil {
			return err
		}
		if _, dup := hdr[t.Name]; dup {
			return fmt.Errorf("safetensors: tensor %q given twice", t.Name)
		}
		shape := t.Shape
		if shape == nil {
			shape = []int64{}
		}
		end := off + int64(len(t.Data))*sz
		hdr[t.Name] = headerEntry{DType: dtype, Shape: shape, DataOffsets: [2]int64{off, end}}
		off = end
	}
	hb, err := json.Marshal(hdr)
	if err != nil {
		return fmt.Errorf("safetensors: encode header: %w", err)
	}
	for len(hb)%8 != 0 {
		hb = append(hb, ' ')
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	var lenBuf [8]byte
	binary.LittleEndian.PutUint64(lenBuf[:], uint64(len(hb)))
	if _, err := bw.Write(lenBuf[:]); err != nil {
		return fmt.Errorf("safetensors: write header: %w", err)
	}
	if _, err := bw.Write(hb); err != nil {
		return fmt.Errorf("safetensors: write header: %w", err)
	}
	const chunk = 1 << 18
	buf := make([]byte, 0, chunk*sz)
	for _, t := range tensors {
		for i := 0; i < len(t.Data); i += chunk {
			buf, err = encodeFloat32(buf[:0], t.Data[i:min(i+chunk, len(t.Data))], dtype)
			if err != nil {
				return fmt.Errorf("safetensors: tensor %q: %w", t.Name, err)
			}
			if _, err := bw.Write(buf); err != nil {
				return fmt.Errorf("safetensors: write tensor %q: %w", t.Name, err)
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("safetensors: write: %w", err)
	}
	return nil
}

// WriteFile writes tensors to path (see Write).
func WriteFile(path string, tensors []Tensor, dtype DType, metadata map[string]string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	if err := Write(f, tensors, dtype, metadata); err != nil {
		f.Close()
		return fmt.Errorf("%w (writing %s)", err, path)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("safetensors: close %s: %w", path, err)
	}
	return nil
}

// WriteDir writes a checkpoint into dir the way Hugging Face save_pretrained
// does: model.safetensors when everything fits in one shard of maxShardBytes
// (0 means no limit), otherwise model-0000i-of-0000n.safetensors shards plus
// model.safetensors.index.json. Tensors are never split; a shard may exceed
// the limit when one tensor alone does. It returns the files written.
func WriteDir(dir string, tensors []Tensor, dtype DType, maxShardBytes int64, metadata map[string]string) ([]string, error) {
	sz := int64(dtype.Size())
	var shards [][]Tensor
	var cur []Tensor
	var curBytes, total int64
	for _, t := range tensors {
		b := int64(len(t.Data)) * sz
		total += b
		if maxShardBytes > 0 && len(cur) > 0 && curBytes+b > maxShardBytes {
			shards = append(shards, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, t)
		curBytes += b
	}
	if len(cur) > 0 || len(shards) == 0 {
		shards = append(shards, cur)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if len(shards) == 1 {
		p := filepath.Join(dir, "model.safetensors")
		return []string{p}, WriteFile(p, shards[0], dtype, metadata)
	}
	idx := Index{Metadata: map[string]any{"total_size": total}, WeightMap: map[string]string{}}
	var files []string
	for i, shard := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, len(shards))
		p := filepath.Join(dir, name)
		if err := WriteFile(p, shard, dtype, metadata); err != nil {
			return files, err
		}
		files = append(files, p)
		for _, t := range shard {
			idx.WeightMap[t.Name] = name
		}
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return files, fmt.Errorf("safetensors: encode index: %w", err)
	}
	p := filepath.Join(dir, IndexFile)
	if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
		return files, fmt.Errorf("safetensors: %w", err)
	}
	return append(files, p), nil
}
