package safetensors

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

func TestF16RoundTripsEveryHalf(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f { // NaN: payload need not survive, NaN-ness must
			if g := F16ToF32(F32ToF16(f)); g == g {
				t.Fatalf("NaN %#04x came back as %v", h, g)
			}
			continue
		}
		if got := F32ToF16(f); got != uint16(h) {
			t.Fatalf("half %#04x -> %v -> %#04x", h, f, got)
		}
	}
}

func TestF32ToF16Rounding(t *testing.T) {
	cases := []struct {
		in   float32
		want uint16
	}{
		{1, 0x3c00},
		{-2, 0xc000},
		{65504, 0x7bff},
		{65520, 0x7c00},                  // rounds up to +inf
		{1 + 1.0/2048, 0x3c00},           // tie, even stays
		{1 + 3.0/2048, 0x3c02},           // tie, odd rounds up
		{float32(math.Ldexp(1, -24)), 1}, // smallest subnormal
		{float32(math.Ldexp(1, -26)), 0}, // below half the smallest subnormal
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, c := range cases {
		if got := F32ToF16(c.in); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
}

func TestF32ToBF16Rounding(t *testing.T) {
	cases := []struct {
		in   uint32
		want uint16
	}{
		{0x3f800000, 0x3f80}, // 1.0
		{0x3f808000, 0x3f80}, // tie, even stays
		{0x3f818000, 0x3f82}, // tie, odd rounds up
		{0x3f808001, 0x3f81}, // above tie
		{0x7f7fffff, 0x7f80}, // max float rounds to inf, as torch does
	}
	for _, c := range cases {
		if got := F32ToBF16(math.Float32frombits(c.in)); got != c.want {
			t.Errorf("F32ToBF16(%#08x) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if got := F32ToBF16(float32(math.NaN())); got&0x7f80 != 0x7f80 || got&0x7f == 0 {
		t.Errorf("NaN became %#04x", got)
	}
}

func sample() []Tensor {
	a := make([]float32, 6)
	for i := range a {
		a[i] = float32(i) - 2.5
	}
	return []Tensor{
		{Name: "model.embed_tokens.weight", Shape: []int64{2, 3}, Data: a},
		{Name: "model.norm.weight", Shape: []int64{3}, Data: []float32{1, 0.5, -0.25}},
		{Name: "scalar", Shape: nil, Data: []float32{7}},
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	for _, dt := range []DType{F32, F16, BF16} {
		t.Run(string(dt), func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "x.safetensors")
			in := sample()
			if err := WriteFile(p, in, dt, map[string]string{"format": "pt"}); err != nil {
				t.Fatal(err)
			}
			f, err := Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Metadata["format"] != "pt" {
				t.Errorf("metadata = %v", f.Metadata)
			}
			if got := f.Names(); len(got) != 3 || got[0] != in[0].Name || got[2] != "scalar" {
				t.Errorf("names in storage order = %v", got)
			}
			if f.dataStart%8 != 0 {
				t.Errorf("data starts at %d, not 8-byte aligned", f.dataStart)
			}
			for _, want := range in {
				info, ok := f.Info(want.Name)
				if !ok || info.DType != dt || len(info.Shape) != len(want.Shape) {
					t.Fatalf("info %q = %+v, %v", want.Name, info, ok)
				}
				got, err := f.Float32(want.Name)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want.Data { // all sample values are exact in every dtype
					if got[i] != want.Data[i] {
						t.Fatalf("%s[%d] = %v, want %v", want.Name, i, got[i], want.Data[i])
					}
				}
			}
			if _, err := f.Float32("nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("missing tensor error = %v", err)
			}
		})
	}
}

// TestReadHandMadeFile checks the reader against bytes laid out by hand from
// the format's specification, independent of this package's writer.
func TestReadHandMadeFile(t *testing.T) {
	hdr := `{"b":{"dtype":"BF16","shape":[2],"data_offsets":[8,12]},"a":{"dtype":"F16","shape":[1,2],"data_offsets":[4,8]},"c":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
	var b []byte
	b = binary.LittleEndian.AppendUint64(b, uint64(len(hdr)))
	b = append(b, hdr...)
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(3.5)) // c
	b = binary.LittleEndian.AppendUint16(b, 0x3c00)                // a: 1
	b = binary.LittleEndian.AppendUint16(b, 0xc100)                // a: -2.5
	b = binary.LittleEndian.AppendUint16(b, 0x4040)                // b: 3
	b = binary.LittleEndian.AppendUint16(b, 0xbf00)                // b: -0.5
	p := filepath.Join(t.TempDir(), "hand.safetensors")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := OpenFiles(p)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := map[string][]float32{"a": {1, -2.5}, "b": {3, -0.5}, "c": {3.5}}
	for name, w := range want {
		got, err := c.Float32(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(w) || got[0] != w[0] || got[len(got)-1] != w[len(w)-1] {
			t.Errorf("%s = %v, want %v", name, got, w)
		}
	}
	if names := c.Names(); names[0] != "c" || names[2] != "b" {
		t.Errorf("storage order = %v", names)
	}
}

func TestOpenRejectsCorruptHeaders(t *testing.T) {
	cases := map[string]string{
		"offsets past end": `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`,
		"size mismatch":    `{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,4]}}`,
		"not json":         `{"a":`,
	}
	for name, hdr := range cases {
		t.Run(name, func(t *testing.T) {
			var b []byte
			b = binary.LittleEndian.AppendUint64(b, uint64(len(hdr)))
			b = append(b, hdr...)
			b = append(b, 0, 0, 0, 0)
			p := filepath.Join(t.TempDir(), "bad.safetensors")
			os.WriteFile(p, b, 0o644)
			if f, err := Open(p); err == nil {
				f.Close()
				t.Fatal("Open accepted a corrupt header")
			}
		})
	}
	p := filepath.Join(t.TempDir(), "huge.safetensors")
	os.WriteFile(p, binary.LittleEndian.AppendUint64(nil, 1<<40), 0o644)
	if _, err := Open(p); err == nil {
		t.Fatal("Open accepted a header length past the file end")
	}
}

func TestWriteDirShardsAndIndex(t *testing.T) {
	dir := t.TempDir()
	in := sample()
	files, err := WriteDir(dir, in, F32, 12, nil) // 24 bytes, 12, 4: three shards
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 4 || filepath.Base(files[3]) != IndexFile {
		t.Fatalf("files = %v", files)
	}
	c, err := OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if len(c.Names()) != 3 {
		t.Fatalf("names = %v", c.Names())
	}
	got, err := c.Float32("model.norm.weight")
	if err != nil || got[2] != -0.25 {
		t.Fatalf("norm = %v, %v", got, err)
	}

	single := t.TempDir()
	files, err = WriteDir(single, in, BF16, 0, nil)
	if err != nil || len(files) != 1 || filepath.Base(files[0]) != "model.safetensors" {
		t.Fatalf("single = %v, %v", files, err)
	}
	c2, err := OpenDir(single)
	if err != nil {
		t.Fatal(err)
	}
	c2.Close()
}

func TestOpenDirRejectsWrongIndex(t *testing.T) {
	dir := t.TempDir()
	if _, err := WriteDir(dir, sample(), F32, 12, nil); err != nil {
		t.Fatal(err)
	}
	idx := `{"weight_map":{"model.norm.weight":"model-00001-of-00003.safetensors"}}`
	os.WriteFile(filepath.Join(dir, IndexFile), []byte(idx), 0o644)
	if c, err := OpenDir(dir); err == nil {
		c.Close()
		t.Fatal("OpenDir accepted an index that names the wrong shard")
	}
}

func TestWriteRejectsBadTensors(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(p, []Tensor{{Name: "a", Shape: []int64{3}, Data: []float32{1}}}, F32, nil); err == nil {
		t.Error("shape/data mismatch accepted")
	}
	if err := WriteFile(p, []Tensor{{Name: "a", Shape: []int64{1}, Data: []float32{1}}, {Name: "a", Shape: []int64{1}, Data: []float32{1}}}, F32, nil); err == nil {
		t.Error("duplicate name accepted")
	}
	if err := WriteFile(p, sample(), "I8", nil); err == nil {
		t.Error("I8 accepted")
	}
}
