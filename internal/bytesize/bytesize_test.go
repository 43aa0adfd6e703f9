package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{"500MB": 500e6, "2GiB": 2 << 30, "1.5 GB": 15e8, "4096": 4096, "10kib": 10240} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MB", "-1GB", "1XB", "NaN"} {
		if _, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted", in)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 2306867: "2.2 MiB", 3 << 30: "3.0 GiB", 5 << 50: "5120.0 TiB"} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
