package chat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// Kwargs are chat_template_kwargs: extra template variables such as Qwen3's
// enable_thinking, a JSON object kept in the order written (nil: none). A job
// file's or train config's YAML mapping decodes into it, and so does a
// --chat-template-kwargs flag's JSON (ParseKwargs).
type Kwargs json.RawMessage

// ParseKwargs reads a JSON object of template variables; "" is none.
func ParseKwargs(text string) (Kwargs, error) {
	if len(bytes.TrimSpace([]byte(text))) == 0 {
		return nil, nil
	}
	var k Kwargs
	if err := k.UnmarshalJSON([]byte(text)); err != nil {
		return nil, err
	}
	return k, nil
}

// MarshalJSON writes the object as given (null when none).
func (k Kwargs) MarshalJSON() ([]byte, error) {
	if len(k) == 0 {
		return []byte("null"), nil
	}
	return k.compact(), nil
}

func (k Kwargs) compact() []byte {
	var buf bytes.Buffer
	if err := json.Compact(&buf, k); err != nil {
		return k
	}
	return buf.Bytes()
}

// UnmarshalJSON accepts a JSON object (or null for none).
func (k *Kwargs) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if string(data) == "null" {
		*k = nil
		return nil
	}
	v, err := jinjaValue(data)
	if err != nil {
		return fmt.Errorf("chat_template_kwargs: %w", err)
	}
	if !v.IsDict() {
		return errors.New("chat_template_kwargs: want a JSON object of template variables, like {\"enable_thinking\": false}")
	}
	for _, key := range reservedVars {
		if v.AsDict().Has(key) {
			return fmt.Errorf("chat_template_kwargs: key %s is set by the renderer itself", key)
		}
	}
	*k = Kwargs(bytes.Clone(data))
	*k = Kwargs(k.compact())
	return nil
}

// UnmarshalYAML reads a YAML mapping, keeping its key order.
func (k *Kwargs) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		*k = nil
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return fmt.Errorf("line %d: chat_template_kwargs: want a mapping of template variables, like {enable_thinking: false}", n.Line)
	}
	data, err := JSONFromYAML(n)
	if err != nil {
		return err
	}
	return k.UnmarshalJSON(data)
}

// JSONFromYAML converts a YAML node to JSON keeping mapping key order, so a
// tool schema or template variable written in YAML renders in the order the
// user wrote it (decoding into map[string]any and marshalling would sort it).
func JSONFromYAML(n *yaml.Node) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := writeYAMLAsJSON(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeYAMLAsJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return writeYAMLAsJSON(buf, n.Content[0])
	case yaml.AliasNode:
		return writeYAMLAsJSON(buf, n.Alias)
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.Kind != yaml.ScalarNode || key.Tag == "!!merge" {
				return fmt.Errorf("line %d: only plain keys are supported in a JSON value", key.Line)
			}
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, _ := marshalOrdered(key.Value)
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeYAMLAsJSON(buf, val); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, item := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeYAMLAsJSON(buf, item); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		data, err := marshalOrdered(v)
		if err != nil {
			return fmt.Errorf("line %d: %w", n.Line, err)
		}
		buf.Write(data)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}
