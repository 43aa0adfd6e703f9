package tools

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// positiveKey is a registry key whose zero value means its default (def):
// written, it must be > 0, since a written 0 would silently mean the default
// and a negative number means nothing (docs/refusals.md).
type positiveKey struct{ key, def string }

// The keys of an entry and of defaults.
var entryPositive = []positiveKey{
	{"concurrency", "only the executor's global limit"},
	{"max_output", "the executor's, 512 tokens"},
}

// The settings of the built-in tools (the python tool checks its own).
var (
	calculatorPositive = []positiveKey{
		{"max_length", "1024"}, {"max_depth", "64"}, {"max_exponent", "4096"}, {"max_bits", "65536"}, {"decimals", "12"},
	}
	searchPositive = []positiveKey{{"k", "3"}, {"k1", "1.2"}, {"b", "0.75"}, {"snippet_bytes", "400"}}
	httpPositive   = []positiveKey{{"max_response_bytes", "1 MiB"}}
)

// checkPositive refuses a key of keys that the mapping m sets to a number ≤ 0,
// naming it (after prefix) with its line.
func checkPositive(m *yaml.Node, prefix string, keys []positiveKey) error {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil // not set, or a shape the strict decode reports
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		for _, p := range keys {
			var f float64
			if k.Value != p.key || v.Kind != yaml.ScalarNode || v.Tag == "!!null" || v.Decode(&f) != nil || f > 0 {
				continue
			}
			return fmt.Errorf("%s%s (line %d): %s is not a valid value, want > 0 (omit the key for the default: %s)", prefix, p.key, k.Line, v.Value, p.def)
		}
	}
	return nil
}

// positiveSettings applies checkPositive to the entry's settings.
func (b builder) positiveSettings(keys []positiveKey) error {
	return checkPositive(b.settings, "settings.", keys)
}
