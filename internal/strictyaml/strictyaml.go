// Package strictyaml is toolrl's one way to read a YAML document into a Go
// value: every key must be a field of the value (a misspelt key would
// otherwise silently mean "default"), an empty document decodes to the
// zero value, and a second document in the same file is an error (its keys
// would be ignored). Job files, train configs and tool registries use it.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// Decode reads the single YAML document in data into v, refusing unknown
// keys. The error is the YAML library's, which names the line
// ("line 3: field tempreature not found in type ...").
func Decode(data []byte, v any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return err
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return err
		}
		return fmt.Errorf("line %d: a second YAML document (\"---\"): one file holds one", next.Line)
	}
	return nil
}
