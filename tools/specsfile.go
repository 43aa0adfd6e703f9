package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
)

// ErrSpecsNotJSON is the error of ReadSpecs for a file that starts as a
// JSON array of specs but does not parse.
var ErrSpecsNotJSON = errors.New("not valid JSON")

// ReadSpecs reads the tool specs a chat template renders from path: a JSON
// array of OpenAI function specs, returned as written (its schemas' key
// order kept), or else a registry file (YAML or JSON, as LoadRegistry
// reads it), whose Specs are returned as a rollout renders them.
func ReadSpecs(ctx context.Context, path string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tools: %w", err)
	}
	if trimmed := bytes.TrimSpace(data); bytes.HasPrefix(trimmed, []byte("[")) {
		if !json.Valid(trimmed) {
			return nil, fmt.Errorf("%s: %w", path, ErrSpecsNotJSON)
		}
		return json.RawMessage(trimmed), nil
	}
	reg, err := LoadRegistry(ctx, path)
	if err != nil {
		return nil, err
	}
	defer reg.Close()
	specs, err := json.Marshal(reg.Specs())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return specs, nil
}
