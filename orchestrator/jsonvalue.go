package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/ardanlabs/jinja"
)

// jinjaValue converts JSON to a template value, keeping object key order:
// chat templates print tool schemas with `tojson`, and Python keeps insertion
// order, so a sorted map would render a different prompt than transformers.
func jinjaValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return jinja.Undefined(), fmt.Errorf("convert JSON for the chat template: %w", err)
	}
	return v, nil
}

func decodeOrdered(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				key, _ := kt.(string)
				val, err := decodeOrdered(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(key, val)
			}
			_, err := dec.Token() // '}'
			return d, err
		case '[':
			var items []jinja.Value
			for dec.More() {
				val, err := decodeOrdered(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, val)
			}
			_, err := dec.Token() // ']'
			return jinja.NewList(items), err
		}
		return jinja.Undefined(), fmt.Errorf("unexpected delimiter %v", t)
	default:
		return jinja.FromGoValue(t), nil
	}
}
