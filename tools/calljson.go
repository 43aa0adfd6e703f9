package tools

import (
	"bytes"
	"encoding/json"
	"strings"
)

// decodeCallJSON parses body, one JSON object {"name": ..., "arguments":
// {...}}, into c's Name and compact Arguments, as the JSON call forms
// (Hermes, Llama-3.1 JSON, Mistral) write it: "parameters" is accepted for
// "arguments" (Llama's templates say "parameters"; models write both), and
// arguments given as a string holding a JSON object are unwrapped. Missing
// arguments are {} unless needArgs (then the object is not a call). On
// failure it sets c's ClassBadJSON error (and a sniffed name) and returns
// false; it does not validate against the registry.
func decodeCallJSON(body string, c *Call, needArgs bool) bool {
	var msg struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&msg); err != nil {
		c.Name = sniffName(body)
		c.ErrorClass, c.Error = ClassBadJSON, err.Error()
		return false
	}
	if dec.More() {
		c.ErrorClass, c.Error = ClassBadJSON, "text after the JSON object"
		return false
	}
	if msg.Name == nil || *msg.Name == "" {
		c.ErrorClass, c.Error = ClassBadJSON, `missing "name"`
		return false
	}
	c.Name = *msg.Name
	args := msg.Arguments
	if args == nil {
		args = msg.Parameters
	}
	if args == nil && needArgs {
		c.ErrorClass, c.Error = ClassBadJSON, `missing "arguments" (or "parameters")`
		return false
	}
	args = bytes.TrimSpace(args)
	if len(args) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	if args[0] == '"' { // arguments given as a string of JSON
		var s string
		if err := json.Unmarshal(args, &s); err != nil {
			c.ErrorClass, c.Error = ClassBadJSON, "arguments: "+err.Error()
			return false
		}
		args = json.RawMessage(strings.TrimSpace(s))
		if !json.Valid(args) {
			c.ErrorClass, c.Error = ClassBadJSON, "arguments string is not JSON"
			return false
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, args); err != nil {
		c.ErrorClass, c.Error = ClassBadJSON, "arguments: "+err.Error()
		return false
	}
	c.Arguments = compact.Bytes()
	return true
}

// jsonScan follows the nesting of JSON text one byte at a time (objects,
// arrays, strings and their escapes), without parsing it: enough to know
// where a value that began with '{' or '[' ends, in O(1) per byte.
type jsonScan struct {
	depth            int
	inString, escape bool
}

// step consumes c and reports whether it closed the outermost value.
func (s *jsonScan) step(c byte) bool {
	switch {
	case s.escape:
		s.escape = false
	case s.inString:
		switch c {
		case '\\':
			s.escape = true
		case '"':
			s.inString = false
		}
	case c == '"':
		s.inString = true
	case c == '{' || c == '[':
		s.depth++
	case c == '}' || c == ']':
		s.depth--
		return s.depth == 0
	}
	return false
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
