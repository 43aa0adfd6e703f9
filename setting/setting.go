// Package setting is toolrl's one definition of a setting. A setting is a
// field of type Value[T] in a spec struct, declared once with its YAML key,
// its flag, its default, its usage text and (in the spec's Validate) its
// checks:
//
//	GroupSize setting.Value[int] `yaml:"group_size" flag:"group-size" default:"8" usage:"G, samples per prompt"`
//
// The layers a setting can come from are applied over that one record, in
// the order defaults < generation_config.json < file < flags: a YAML file
// decodes into the spec (Source File), Bind registers the spec's flags on a
// cobra/pflag flag set (Source Flag, only when the flag is given), Set
// applies a "key=value" override (toolrl train --set), Overlay and Fill
// merge two layers, ApplyDefaults fills what no layer set. A Value knows
// whether it was set, and by which layer, by construction: an explicit zero
// is a setting, never "unset". Entries lists every setting with its value
// and source, for the run's settings record and its summary; Fields lists
// the declarations, for the settings reference (docs/settings.md).
package setting

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Source names the layer that set a value.
type Source string

// The layers, lowest first. A Value that no layer set has Source "".
const (
	// Default is the declaration's default tag (or a default derived from
	// other settings, documented on the field).
	Default Source = "default"
	// Model is the model folder's generation_config.json.
	Model Source = "generation_config.json"
	// File is a YAML file: a job file or a train config.
	File Source = "file"
	// Flag is a command-line flag.
	Flag Source = "flag"
	// Override is a --set KEY=VALUE on the command line: the flags' rank,
	// applied after them.
	Override Source = "--set"
	// Code is a value set by a Go program (setting.Of).
	Code Source = "code"
)

// Rank orders the layers: a value from a higher rank overrides one from a
// lower. Unset is 0, Default 1, Model 2, File and Code 3, Flag and
// Override 4.
func (s Source) Rank() int {
	switch s {
	case Default:
		return 1
	case Model:
		return 2
	case File, Code:
		return 3
	case Flag, Override:
		return 4
	}
	return 0
}

// Value is one setting: a value of type T and the layer that set it. The
// zero Value is unset. T is bool, int, int64, uint64, float64, string,
// time.Duration or []string.
type Value[T any] struct {
	v   T
	src Source
}

// Of returns a Value set to v by Go code (Source Code).
func Of[T any](v T) Value[T] { return Value[T]{v: v, src: Code} }

// From returns a Value set to v by the layer src.
func From[T any](v T, src Source) Value[T] { return Value[T]{v: v, src: src} }

// Get returns the value (T's zero value when unset).
func (x Value[T]) Get() T { return x.v }

// Any returns the value as an interface, for code that walks settings by
// reflection (the run's settings record).
func (x Value[T]) Any() any { return x.v }

// Or returns the value when set, else def.
func (x Value[T]) Or(def T) T {
	if x.src == "" {
		return def
	}
	return x.v
}

// IsSet reports whether a layer set the value (also to T's zero value).
func (x Value[T]) IsSet() bool { return x.src != "" }

// Source returns the layer that set the value ("" when unset).
func (x Value[T]) Source() Source { return x.src }

// Set sets the value from the layer src.
func (x *Value[T]) Set(v T, src Source) { x.v, x.src = v, src }

// IsZero reports whether the value is unset, for YAML's and JSON's omitempty.
func (x Value[T]) IsZero() bool { return x.src == "" }

// String formats the value as a flag shows it.
func (x Value[T]) String() string { return format(x.v) }

// UnmarshalYAML decodes a YAML value as set by a file. A null (`key:` with
// nothing after it) leaves the value unset.
func (x *Value[T]) UnmarshalYAML(n *yaml.Node) error {
	if n.Tag == "!!null" {
		return nil
	}
	var v T
	if p, ok := any(&v).(*time.Duration); ok && n.Kind == yaml.ScalarNode {
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			return fmt.Errorf("line %d: %q is not a duration (e.g. 90s, 10m)", n.Line, n.Value)
		}
		*p = d
	} else if err := n.Decode(&v); err != nil {
		return err
	}
	x.v, x.src = v, File
	return nil
}

// MarshalYAML writes the value only.
func (x Value[T]) MarshalYAML() (any, error) { return x.v, nil }

// MarshalJSON writes the value only (a spec written as JSON reads back
// with every value set by a file).
func (x Value[T]) MarshalJSON() ([]byte, error) { return json.Marshal(x.v) }

// UnmarshalJSON decodes a JSON value as set by a file; null leaves it unset.
func (x *Value[T]) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	var v T
	if p, ok := any(&v).(*time.Duration); ok && len(data) > 0 && data[0] == '"' {
		var text string
		if err := json.Unmarshal(data, &text); err != nil {
			return err
		}
		d, err := time.ParseDuration(text)
		if err != nil {
			return fmt.Errorf("%q is not a duration (e.g. 90s, 10m)", text)
		}
		*p = d
	} else if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	x.v, x.src = v, File
	return nil
}

// settable is what the reflection walk sees of a *Value[T].
type settable interface {
	IsSet() bool
	Source() Source
	text() string
	setText(s string, src Source) error
	typeName() string
}

func (x *Value[T]) text() string { return format(x.v) }

func (x *Value[T]) typeName() string {
	switch any(x.v).(type) {
	case bool:
		return "bool"
	case int, int64:
		return "int"
	case uint64:
		return "uint"
	case float64:
		return "float"
	case time.Duration:
		return "duration"
	case []string:
		return "strings"
	}
	return "string"
}

// setText parses s as a T. A []string setting set again by the same layer
// appends (a repeated flag); a new layer replaces it.
func (x *Value[T]) setText(s string, src Source) error {
	var err error
	switch p := any(&x.v).(type) {
	case *bool:
		var v bool
		if v, err = strconv.ParseBool(s); err == nil {
			*p = v
		}
	case *int:
		var v int
		if v, err = strconv.Atoi(s); err == nil {
			*p = v
		}
	case *int64:
		var v int64
		if v, err = strconv.ParseInt(s, 10, 64); err == nil {
			*p = v
		}
	case *uint64:
		var v uint64
		if v, err = strconv.ParseUint(s, 10, 64); err == nil {
			*p = v
		}
	case *float64:
		var v float64
		if v, err = strconv.ParseFloat(s, 64); err == nil {
			*p = v
		}
	case *time.Duration:
		var v time.Duration
		if v, err = time.ParseDuration(s); err == nil {
			*p = v
		}
	case *string:
		*p = s
	case *[]string:
		if x.src != src {
			*p = nil
		}
		*p = append(*p, s)
	default:
		return fmt.Errorf("unsupported setting type %T", x.v)
	}
	if err != nil {
		var num *strconv.NumError
		if errors.As(err, &num) {
			err = num.Err
		}
		return fmt.Errorf("%q is not a valid %s value: %w", s, x.typeName(), err)
	}
	x.src = src
	return nil
}

// format writes v as a flag or the settings record shows it.
func format(v any) string {
	switch v := v.(type) {
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []string:
		return strings.Join(v, ",")
	case fmt.Stringer:
		return v.String()
	}
	return fmt.Sprint(v)
}
