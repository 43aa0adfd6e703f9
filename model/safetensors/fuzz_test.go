package safetensors

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpen feeds arbitrary files to the reader: it may reject them, but it
// must not panic, and what it accepts must read back within bounds.
func FuzzOpen(f *testing.F) {
	hdr := `{"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"__metadata__":{"k":"v"}}`
	seed := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	seed = append(append(seed, hdr...), 0, 0x3c, 0, 0xc0)
	f.Add(seed)
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, '{'})
	big := `{"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,0]}}`
	f.Add(append(binary.LittleEndian.AppendUint64(nil, uint64(len(big))), big...))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "fuzz.safetensors")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		sf, err := Open(p)
		if err != nil {
			return
		}
		defer sf.Close()
		for _, name := range sf.Names() {
			info, _ := sf.Info(name)
			if info.DType == F32 || info.DType == F16 || info.DType == BF16 {
				if _, err := sf.Float32(name); err != nil {
					t.Fatalf("accepted tensor %q does not read: %v", name, err)
				}
			}
		}
	})
}
