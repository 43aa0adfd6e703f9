// Package bytesize reads and writes sizes in bytes as people type and read
// them: "500MB", "2GiB", "1.5 GiB".
package bytesize

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Parse reads a size as save_pretrained's max_shard_size does: a number
// with an optional unit, KB/MB/GB/TB in powers of 1000, KiB/MiB/GiB/TiB in
// powers of 1024 (no unit: bytes), case-insensitive. The size must be
// positive and finite.
func Parse(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') && t[i-1] != '.' {
		i--
	}
	num, unit := t[:i], strings.ToUpper(strings.TrimSpace(t[i:]))
	mult := map[string]float64{"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
		"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40}[unit]
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || !(v > 0) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("want a positive size such as 500MB or 2GiB")
	}
	return int64(v * mult), nil
}

// Format writes n bytes for a person: "512 B" below 1 KiB, else one decimal
// in the largest binary unit up to TiB ("2.2 MiB").
func Format(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	exp := int(math.Log(float64(n)) / math.Log(1024))
	exp = min(exp, 4)
	return fmt.Sprintf("%.1f %ciB", float64(n)/math.Pow(1024, float64(exp)), "KMGT"[exp-1])
}
