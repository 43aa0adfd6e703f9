// Package search is a BM25 index over a local JSONL corpus, built in memory
// when it is opened.
package search

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"unicode"
)

// Options configure an index. Zero values mean the defaults beside them.
type Options struct {
	// Corpus is the JSONL file: one JSON object per line.
	Corpus string `yaml:"corpus" json:"corpus"`
	// TextField, TitleField and IDField name the fields of a line (defaults
	// "text", "title", "id"; title and id are optional in the data).
	TextField  string `yaml:"text_field" json:"text_field"`
	TitleField string `yaml:"title_field" json:"title_field"`
	IDField    string `yaml:"id_field" json:"id_field"`
	// K is the number of hits returned when the call does not say (default 3).
	K int `yaml:"k" json:"k"`
	// K1 and B are the BM25 parameters (defaults 1.2 and 0.75).
	K1 float64 `yaml:"k1" json:"k1"`
	B  float64 `yaml:"b" json:"b"`
	// SnippetBytes bounds the text shown per hit (default 400).
	SnippetBytes int `yaml:"snippet_bytes" json:"snippet_bytes"`
}

func (o Options) withDefaults() Options {
	if o.TextField == "" {
		o.TextField = "text"
	}
	if o.TitleField == "" {
		o.TitleField = "title"
	}
	if o.IDField == "" {
		o.IDField = "id"
	}
	if o.K <= 0 {
		o.K = 3
	}
	if o.K1 <= 0 {
		o.K1 = 1.2
	}
	if o.B <= 0 {
		o.B = 0.75
	}
	if o.SnippetBytes <= 0 {
		o.SnippetBytes = 400
	}
	return o
}

// Doc is one document of the corpus.
type Doc struct {
	ID, Title, Text string
}

type posting struct {
	doc int32
	tf  int32
}

// Index is an immutable BM25 index; safe for concurrent use.
type Index struct {
	opts     Options
	docs     []Doc
	lens     []int32
	avgLen   float64
	postings map[string][]posting
}

// Open reads the corpus named by opts.Corpus and indexes it.
func Open(opts Options) (*Index, error) {
	opts = opts.withDefaults()
	f, err := os.Open(opts.Corpus)
	if err != nil {
		return nil, fmt.Errorf("search corpus: %w", err)
	}
	defer f.Close()
	var docs []Doc
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	line := 0
	for sc.Scan() {
		line++
		raw := strings.TrimSpace(sc.Text())
		if raw == "" {
			continue
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(raw), &obj); err != nil {
			return nil, fmt.Errorf("search corpus %s line %d: %w", opts.Corpus, line, err)
		}
		text, ok := obj[opts.TextField].(string)
		if !ok {
			return nil, fmt.Errorf("search corpus %s line %d: no string field %q", opts.Corpus, line, opts.TextField)
		}
		d := Doc{Text: text}
		d.Title, _ = obj[opts.TitleField].(string)
		switch id := obj[opts.IDField].(type) {
		case string:
			d.ID = id
		case float64:
			d.ID = fmt.Sprint(id)
		default:
			d.ID = fmt.Sprint(line)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("search corpus %s line %d: %w", opts.Corpus, line+1, err)
	}
	if len(docs) == 0 {
		return nil, fmt.Errorf("search corpus %s: no documents", opts.Corpus)
	}
	return Build(docs, opts), nil
}

// Build indexes docs; the title counts as part of the text.
func Build(docs []Doc, opts Options) *Index {
	ix := &Index{opts: opts.withDefaults(), docs: docs, lens: make([]int32, len(docs)), postings: map[string][]posting{}}
	total := 0
	for i, d := range docs {
		tf := map[string]int32{}
		terms := Terms(d.Title + " " + d.Text)
		for _, t := range terms {
			tf[t]++
		}
		ix.lens[i] = int32(len(terms))
		total += len(terms)
		for t, n := range tf {
			ix.postings[t] = append(ix.postings[t], posting{doc: int32(i), tf: n})
		}
	}
	ix.avgLen = float64(total) / float64(max(1, len(docs)))
	return ix
}

// Len is the number of documents.
func (ix *Index) Len() int { return len(ix.docs) }

// Doc returns the i-th document of the corpus, 0 ≤ i < Len().
func (ix *Index) Doc(i int) Doc { return ix.docs[i] }

// Terms splits text into lower-cased letter/digit runs.
func Terms(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsNumber(r)
	})
}

// Hit is one search result.
type Hit struct {
	Doc   Doc
	Score float64
}

// Search returns the k best documents for query by Okapi BM25 (Robertson &
// Zaragoza 2009), with Lucene's non-negative idf
// ln(1 + (N - n + 0.5)/(n + 0.5)); ties go to the earlier document.
func (ix *Index) Search(query string, k int) []Hit {
	if k <= 0 {
		k = ix.opts.K
	}
	scores := map[int32]float64{}
	seen := map[string]bool{}
	n := float64(len(ix.docs))
	for _, t := range Terms(query) {
		if seen[t] {
			continue
		}
		seen[t] = true
		ps := ix.postings[t]
		if len(ps) == 0 {
			continue
		}
		idf := math.Log(1 + (n-float64(len(ps))+0.5)/(float64(len(ps))+0.5))
		for _, p := range ps {
			tf := float64(p.tf)
			norm := ix.opts.K1 * (1 - ix.opts.B + ix.opts.B*float64(ix.lens[p.doc])/ix.avgLen)
			scores[p.doc] += idf * tf * (ix.opts.K1 + 1) / (tf + norm)
		}
	}
	type scored struct {
		doc   int32
		score float64
	}
	all := make([]scored, 0, len(scores))
	for d, s := range scores {
		all = append(all, scored{d, s})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].score != all[j].score {
			return all[i].score > all[j].score
		}
		return all[i].doc < all[j].doc
	})
	hits := make([]Hit, 0, min(k, len(all)))
	for _, s := range all[:min(k, len(all))] {
		hits = append(hits, Hit{Doc: ix.docs[s.doc], Score: s.score})
	}
	return hits
}

// Format renders hits as numbered entries, "[1] Title (id)" then the text
// cut to the snippet budget; "no results" when there are none.
func (ix *Index) Format(hits []Hit) string {
	if len(hits) == 0 {
		return "no results"
	}
	var b strings.Builder
	for i, h := range hits {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "[%d] ", i+1)
		if h.Doc.Title != "" {
			b.WriteString(h.Doc.Title + " ")
		}
		fmt.Fprintf(&b, "(%s)\n", h.Doc.ID)
		text := h.Doc.Text
		if len(text) > ix.opts.SnippetBytes {
			cut := ix.opts.SnippetBytes
			for cut > 0 && !isRuneStart(text[cut]) {
				cut--
			}
			text = text[:cut] + "…"
		}
		b.WriteString(text)
	}
	return b.String()
}

func isRuneStart(c byte) bool { return c&0xC0 != 0x80 }
