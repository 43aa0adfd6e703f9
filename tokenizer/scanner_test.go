package tokenizer

import (
	"slices"
	"testing"
)

// TestScannerMatchesRegexp2 proves the hand-written scanners equal the
// general regexp2 engine on every corpus string (and the goldens prove the
// scanners equal the reference).
func TestScannerMatchesRegexp2(t *testing.T) {
	corpus := readCorpus(t)
	extra := []string{"", " ", "  a", "a  ", "\n\n  x", " \t\n", "'S 'LL 'Re 'x", "123456789", "a1b22c333d4444", " !!\n\n", "\r\n\r\n  \r\n"}
	for _, pattern := range []string{patternGPT2, patternLlama3, patternQwen2, patternO200k} {
		fast, err := newRegexMatcher(pattern, true)
		if err != nil {
			t.Fatal(err)
		}
		if fast.scan == 0 {
			t.Fatalf("no scanner for %q", pattern)
		}
		slow, err := newRegexMatcher(pattern, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(extra, corpus...) {
			got, err := fast.find(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			want, err := slow.find(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %q on %q:\n scanner %v\n regexp2 %v", pattern, s, got, want)
			}
		}
	}
}

func TestRefClassPattern(t *testing.T) {
	re, err := newRegexMatcher(`[^\s\p{L}]+|\S|\p{N}`, false)
	if err != nil {
		t.Fatal(err)
	}
	// U+137F4 is a letter in the reference (Unicode 16), not in Go 1.26's tables.
	got, err := re.find("\U000137F4=5", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []span{{0, 4, true}, {4, 6, true}} // the letter is not in [^\s\p{L}]
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// FuzzScannerVsRegexp2 compares every hand-written scanner with regexp2 on
// arbitrary text.
func FuzzScannerVsRegexp2(f *testing.F) {
	for _, s := range []string{"Hello, World's 123 4567\n\n  \t", "'S'LL'Ve", "ǅx Ǆy", "a\u0301B\u0301c", " \r\n/\r/"} {
		f.Add(s)
	}
	var fast, slow []*regexMatcher
	for _, p := range []string{patternGPT2, patternLlama3, patternQwen2, patternO200k} {
		a, err := newRegexMatcher(p, true)
		if err != nil {
			f.Fatal(err)
		}
		b, err := newRegexMatcher(p, false)
		if err != nil {
			f.Fatal(err)
		}
		fast, slow = append(fast, a), append(slow, b)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8ValidString(s) {
			return
		}
		for k := range fast {
			got, _ := fast[k].find(s, nil)
			want, err := slow[k].find(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("pattern %q on %q:\n scanner %v\n regexp2 %v", fast[k].pattern, s, got, want)
			}
		}
	})
}
