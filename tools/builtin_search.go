package tools

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/toolrl/toolrl/tools/search"
)

// searchTool adapts package search: {"query": "...", "k": 3} → numbered hits.
type searchTool struct{ ix *search.Index }

// NewSearch indexes the corpus of opts and returns the search tool.
func NewSearch(opts search.Options) (Tool, error) {
	ix, err := search.Open(opts)
	if err != nil {
		return nil, err
	}
	return &searchTool{ix: ix}, nil
}

func (b builder) search() ([]Tool, error) {
	var opts search.Options
	if err := b.decodeSettings(&opts); err != nil {
		return nil, err
	}
	if err := b.positiveSettings(searchPositive); err != nil {
		return nil, err
	}
	if opts.Corpus == "" {
		return nil, errors.New("settings: corpus is required")
	}
	opts.Corpus = b.path(opts.Corpus)
	t, err := NewSearch(opts)
	if err != nil {
		return nil, err
	}
	return []Tool{t}, nil
}

func (s *searchTool) Name() string { return "search" }

func (s *searchTool) Description() string {
	return "Searches a local document collection and returns the best matching passages."
}

func (s *searchTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","description":"keywords to search for"},"k":{"type":"integer","minimum":1,"maximum":10,"description":"how many passages to return"}},"required":["query"],"additionalProperties":false}`)
}

func (s *searchTool) Execute(ctx context.Context, args json.RawMessage) (Result, error) {
	var a struct {
		Query string `json:"query"`
		K     int    `json:"k"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return Result{}, InvalidArgs(err)
	}
	return Result{Content: s.ix.Format(s.ix.Search(a.Query, a.K))}, nil
}
