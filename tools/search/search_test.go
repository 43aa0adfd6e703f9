package search

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSearch(t *testing.T) {
	ix, err := Open(Options{Corpus: "../testdata/corpus.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if ix.Len() != 8 {
		t.Fatalf("Len = %d", ix.Len())
	}
	ids := func(hits []Hit) string {
		var s []string
		for _, h := range hits {
			s = append(s, h.Doc.ID)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		q    string
		k    int
		want string
	}{
		{"capital of France", 1, "paris"},
		{"capital of Germany", 1, "berlin"},
		{"river through Paris", 2, "seine,paris"},
		{"highest mountain above sea level", 1, "everest"},
		{"second highest mountain", 2, "k2,everest"},
		{"circle diameter", 1, "8"},
		{"zebra", 3, ""},
		{"", 3, ""},
	}
	for _, c := range cases {
		if got := ids(ix.Search(c.q, c.k)); got != c.want {
			t.Errorf("Search(%q, %d) = %q, want %q", c.q, c.k, got, c.want)
		}
	}
	// Scores decrease and the default k applies.
	hits := ix.Search("the city", 0)
	if len(hits) != 3 {
		t.Errorf("default k gave %d hits", len(hits))
	}
	for i := 1; i < len(hits); i++ {
		if hits[i].Score > hits[i-1].Score {
			t.Errorf("hits out of order: %v", hits)
		}
	}
	out := ix.Format(ix.Search("capital of France", 1))
	if !strings.HasPrefix(out, "[1] Paris (paris)\nParis is the capital") {
		t.Errorf("Format = %q", out)
	}
	if ix.Format(nil) != "no results" {
		t.Error("Format(nil)")
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"text\": \"a\"}\n{\"title\": \"no text\"}\n"), 0o644)
	if _, err := Open(Options{Corpus: bad}); err == nil || !strings.Contains(err.Error(), "line 2: no string field \"text\"") {
		t.Errorf("Open(bad) = %v", err)
	}
	if _, err := Open(Options{Corpus: filepath.Join(dir, "missing.jsonl")}); err == nil {
		t.Error("Open(missing) did not fail")
	}
}
