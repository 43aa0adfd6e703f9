package tokenizer

import "unicode"

// newRangeTable builds a read-only table from inclusive [lo, hi] pairs (used
// by the generated unicode_ref.go).
func newRangeTable(pairs []rune) *unicode.RangeTable {
	t := &unicode.RangeTable{}
	for i := 0; i+1 < len(pairs); i += 2 {
		lo, hi := pairs[i], pairs[i+1]
		if hi <= 0xFFFF {
			t.R16 = append(t.R16, unicode.Range16{Lo: uint16(lo), Hi: uint16(hi), Stride: 1})
			if hi <= unicode.MaxLatin1 {
				t.LatinOffset++
			}
			continue
		}
		if lo <= 0xFFFF {
			t.R16 = append(t.R16, unicode.Range16{Lo: uint16(lo), Hi: 0xFFFF, Stride: 1})
			lo = 0x10000
		}
		t.R32 = append(t.R32, unicode.Range32{Lo: uint32(lo), Hi: uint32(hi), Stride: 1})
	}
	return t
}
