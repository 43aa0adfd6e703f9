package safetensors

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
)

// maxHeaderBytes bounds the JSON header so that a corrupt length cannot make
// the reader allocate gigabytes (the reference implementation uses 100 MB).
const maxHeaderBytes = 100 << 20

// TensorInfo describes one tensor of a safetensors file.
type TensorInfo struct {
	Name  string
	DType DType
	Shape []int64
	// Begin and End are byte offsets of the tensor's data relative to the
	// start of the data section (after the header).
	Begin, End int64
}

// NumElements returns the product of the shape (1 for a scalar).
func (t TensorInfo) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// File is one open safetensors file. Its methods are safe for concurrent use
// (reads go through ReadAt); Close it when done.
type File struct {
	path      string
	f         *os.File
	dataStart int64
	names     []string // in data-offset order
	tensors   map[string]TensorInfo
	// Metadata holds the header's "__metadata__" string map (may be nil).
	Metadata map[string]string
}

type headerEntry struct {
	DType       DType    `json:"dtype"`
	Shape       []int64  `json:"shape"`
	DataOffsets [2]int64 `json:"data_offsets"`
}

// Open opens a safetensors file and parses and validates its header.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	sf, err := parse(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	return sf, nil
}

func parse(path string, f *os.File) (*File, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("safetensors %s: %w", path, err)
	}
	var lenBuf [8]byte
	if _, err := io.ReadFull(f, lenBuf[:]); err != nil {
		return nil, fmt.Errorf("safetensors %s: read header length: %w", path, err)
	}
	n := binary.LittleEndian.Uint64(lenBuf[:])
	if n > maxHeaderBytes || int64(n)+8 > st.Size() {
		return nil, fmt.Errorf("safetensors %s: header length %d is invalid for a file of %d bytes", path, n, st.Size())
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return nil, fmt.Errorf("safetensors %s: read header: %w", path, err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(hdr, &raw); err != nil {
		return nil, fmt.Errorf("safetensors %s: parse header JSON: %w", path, err)
	}
	sf := &File{path: path, f: f, dataStart: 8 + int64(n), tensors: make(map[string]TensorInfo, len(raw))}
	dataLen := st.Size() - sf.dataStart
	for name, msg := range raw {
		if name == "__metadata__" {
			if err := json.Unmarshal(msg, &sf.Metadata); err != nil {
				return nil, fmt.Errorf("safetensors %s: __metadata__ must map strings to strings: %w", path, err)
			}
			continue
		}
		var e headerEntry
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("safetensors %s: tensor %q: %w", path, name, err)
		}
		ti := TensorInfo{Name: name, DType: e.DType, Shape: e.Shape, Begin: e.DataOffsets[0], End: e.DataOffsets[1]}
		if ti.Begin < 0 || ti.End < ti.Begin || ti.End > dataLen {
			return nil, fmt.Errorf("safetensors %s: tensor %q: data_offsets [%d,%d] outside the %d data bytes", path, name, ti.Begin, ti.End, dataLen)
		}
		elems := int64(1)
		for _, d := range ti.Shape {
			if d < 0 {
				return nil, fmt.Errorf("safetensors %s: tensor %q: negative dimension in shape %v", path, name, ti.Shape)
			}
			// Bound the product by the data size so it cannot overflow.
			if d > 0 && elems > (dataLen+1)/d {
				return nil, fmt.Errorf("safetensors %s: tensor %q: shape %v is larger than the file", path, name, ti.Shape)
			}
			elems *= d
		}
		if sz := ti.DType.Size(); sz > 0 && ti.NumElements()*int64(sz) != ti.End-ti.Begin {
			return nil, fmt.Errorf("safetensors %s: tensor %q: shape %v of %s needs %d bytes, data_offsets give %d",
				path, name, ti.Shape, ti.DType, ti.NumElements()*int64(sz), ti.End-ti.Begin)
		}
		sf.tensors[name] = ti
		sf.names = append(sf.names, name)
	}
	sort.Slice(sf.names, func(i, j int) bool {
		a, b := sf.tensors[sf.names[i]], sf.tensors[sf.names[j]]
		if a.Begin != b.Begin {
			return a.Begin < b.Begin
		}
		return a.Name < b.Name
	})
	return sf, nil
}

// Path returns the file's path as given to Open.
func (sf *File) Path() string { return sf.path }

// Names returns the tensor names in the order their data is stored.
func (sf *File) Names() []string { return append([]string(nil), sf.names...) }

// Info returns the description of a tensor, and whether it exists.
func (sf *File) Info(name string) (TensorInfo, bool) {
	ti, ok := sf.tensors[name]
	return ti, ok
}

// Raw returns a tensor's bytes exactly as stored (little-endian).
func (sf *File) Raw(name string) ([]byte, error) {
	ti, ok := sf.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: %w: %q", sf.path, ErrNotFound, name)
	}
	buf := make([]byte, ti.End-ti.Begin)
	if _, err := sf.f.ReadAt(buf, sf.dataStart+ti.Begin); err != nil {
		return nil, fmt.Errorf("safetensors %s: read tensor %q: %w", sf.path, name, err)
	}
	return buf, nil
}

// Float32 reads a F32, F16 or BF16 tensor and converts it to float32.
func (sf *File) Float32(name string) ([]float32, error) {
	ti, ok := sf.tensors[name]
	if !ok {
		return nil, fmt.Errorf("safetensors %s: %w: %q", sf.path, ErrNotFound, name)
	}
	out := make([]float32, ti.NumElements())
	// Convert in chunks so a big tensor never needs a second full-size buffer.
	const chunk = 1 << 20
	sz := int64(ti.DType.Size())
	if sz == 0 {
		return nil, fmt.Errorf("safetensors %s: tensor %q: dtype %s cannot be read as float32", sf.path, name, ti.DType)
	}
	buf := make([]byte, min(int64(len(out)), chunk)*sz)
	for i := int64(0); i < int64(len(out)); i += chunk {
		n := min(int64(len(out))-i, chunk)
		b := buf[:n*sz]
		if _, err := sf.f.ReadAt(b, sf.dataStart+ti.Begin+i*sz); err != nil {
			return nil, fmt.Errorf("safetensors %s: read tensor %q: %w", sf.path, name, err)
		}
		if err := decodeFloat32(out[i:i+n], b, ti.DType); err != nil {
			return nil, fmt.Errorf("safetensors %s: tensor %q: %w", sf.path, name, err)
		}
	}
	return out, nil
}

// Close closes the underlying file.
func (sf *File) Close() error { return sf.f.Close() }

// ErrNotFound is returned (wrapped) when a tensor name is not in a file or
// checkpoint.
var ErrNotFound = errors.New("tensor not found")

// IndexFile is the name of the JSON index of a sharded checkpoint.
const IndexFile = "model.safetensors.index.json"

// Index is the content of model.safetensors.index.json.
type Index struct {
	Metadata  map[string]any    `json:"metadata,omitempty"`
	WeightMap map[string]string `json:"weight_map"`
}

// Checkpoint is a set of safetensors files read as one: a single file, or
// the shards named by an index. Close it when done.
type Checkpoint struct {
	files []*File
	where map[string]*File
	names []string
}

// OpenDir opens the checkpoint in dir: the shards listed in
// model.safetensors.index.json when it exists, otherwise model.safetensors,
// otherwise every *.safetensors file in dir (a tensor may appear in only one).
func OpenDir(dir string) (*Checkpoint, error) {
	var paths []string
	idxPath := filepath.Join(dir, IndexFile)
	if b, err := os.ReadFile(idxPath); err == nil {
		var idx Index
		if err := json.Unmarshal(b, &idx); err != nil {
			return nil, fmt.Errorf("safetensors: parse %s: %w", idxPath, err)
		}
		if len(idx.WeightMap) == 0 {
			return nil, fmt.Errorf("safetensors: %s: weight_map is empty or missing", idxPath)
		}
		// One tensor per shard to name in errors (the first by name).
		example := map[string]string{}
		for name, f := range idx.WeightMap {
			if e, ok := example[f]; !ok || name < e {
				example[f] = name
			}
		}
		for f, name := range example {
			if f != filepath.Base(f) || f == "." || f == ".." {
				return nil, fmt.Errorf("safetensors: %s maps %q to %q, which is not a file name in %s", idxPath, name, f, dir)
			}
			p := filepath.Join(dir, f)
			if _, err := os.Stat(p); err != nil {
				return nil, fmt.Errorf("safetensors: %s names shard %s (holding %s and others), which cannot be opened: %w", idxPath, f, name, err)
			}
			paths = append(paths, p)
		}
		sort.Strings(paths)
		c, err := OpenFiles(paths...)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(idx.WeightMap))
		for name := range idx.WeightMap {
			names = append(names, name)
		}
		sort.Strings(names) // the same error every run
		for _, name := range names {
			f := idx.WeightMap[name]
			got, ok := c.where[name]
			if !ok || filepath.Base(got.path) != f {
				c.Close()
				return nil, fmt.Errorf("safetensors: %s maps %q to %s, but that shard does not hold it", idxPath, name, f)
			}
		}
		return c, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return OpenFiles(single)
	}
	paths, err := filepath.Glob(filepath.Join(dir, "*.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("safetensors: no %s, model.safetensors or *.safetensors in %s", IndexFile, dir)
	}
	sort.Strings(paths)
	return OpenFiles(paths...)
}

// OpenFiles opens the given safetensors files as one checkpoint. A tensor name
// that appears in two files is an error.
func OpenFiles(paths ...string) (*Checkpoint, error) {
	c := &Checkpoint{where: map[string]*File{}}
	for _, p := range paths {
		sf, err := Open(p)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.files = append(c.files, sf)
		for _, name := range sf.names {
			if prev, dup := c.where[name]; dup {
				c.Close()
				return nil, fmt.Errorf("safetensors: tensor %q is in both %s and %s", name, prev.path, p)
			}
			c.where[name] = sf
			c.names = append(c.names, name)
		}
	}
	return c, nil
}

// Names returns every tensor name, file by file in storage order.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Info returns the description of a tensor, and whether it exists.
func (c *Checkpoint) Info(name string) (TensorInfo, bool) {
	sf, ok := c.where[name]
	if !ok {
		return TensorInfo{}, false
	}
	return sf.Info(name)
}

// File returns the path of the file that holds a tensor ("" when none does).
func (c *Checkpoint) File(name string) string {
	if sf, ok := c.where[name]; ok {
		return sf.path
	}
	return ""
}

// Float32 reads a tensor from whichever file holds it, as float32.
func (c *Checkpoint) Float32(name string) ([]float32, error) {
	sf, ok := c.where[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: %w: %q", ErrNotFound, name)
	}
	return sf.Float32(name)
}

// Close closes every file; it returns the first error.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	c.files = nil
	return first
}
