package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

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
		return jinja.Undefined(), err
	}
	if dec.More() {
		return jinja.Undefined(), fmt.Errorf("more than one JSON value")
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

// writeJSON writes v as Python's json.dumps(v, ensure_ascii=False,
// indent=indent) does (and @huggingface/jinja's tojson): keys in insertion
// order, "," between items and newlines when indenting, no HTML escaping.
func writeJSON(b *strings.Builder, v jinja.Value, indent, depth int) error {
	switch {
	case v.IsUndefined(), v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		f := v.AsFloat()
		if math.IsInf(f, 0) || math.IsNaN(f) {
			return fmt.Errorf("tojson: %v is not JSON", f)
		}
		data, _ := json.Marshal(f)
		b.Write(data)
	case v.IsString():
		writeJSONString(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, item := range items {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(b, indent, depth+1)
			if err := writeJSON(b, item, indent, depth+1); err != nil {
				return err
			}
		}
		newline(b, indent, depth)
		b.WriteByte(']')
	case v.IsDict():
		d := v.AsDict()
		if d.Len() == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteByte('{')
		for i, k := range d.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			newline(b, indent, depth+1)
			writeJSONString(b, k)
			b.WriteString(": ")
			if err := writeJSON(b, d.Data[k], indent, depth+1); err != nil {
				return err
			}
		}
		newline(b, indent, depth)
		b.WriteByte('}')
	default:
		b.WriteString("null")
	}
	return nil
}

func newline(b *strings.Builder, indent, depth int) {
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", indent*depth))
}

// writeJSONString quotes s as JSON.stringify and json.dumps(ensure_ascii=False)
// do: only quotes, backslashes and control characters are escaped.
func writeJSONString(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				b.WriteString(`\u00`)
				b.WriteByte(hex[r>>4])
				b.WriteByte(hex[r&0xf])
				continue
			}
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}
