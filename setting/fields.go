package setting

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/pflag"
)

// Field is one setting's declaration, as its spec struct's tags give it.
type Field struct {
	// Key is the dotted YAML path ("sampling.temperature").
	Key string
	// Flag is the command-line flag without dashes ("" when none).
	Flag string
	// Default is the default as text ("" when none is declared: the zero
	// value, or a default derived from other settings).
	Default string
	// Usage is the one-line help of the flag and the settings reference.
	Usage string
	// Type is the value's type as a flag shows it: bool, int, uint, float,
	// duration, string, strings.
	Type string

	value settable
}

// IsSet reports whether a layer set the field's value.
func (f Field) IsSet() bool { return f.value.IsSet() }

// Source is the layer that set the field's value.
func (f Field) Source() Source { return f.value.Source() }

// Text is the field's value as text.
func (f Field) Text() string { return f.value.text() }

var settableType = reflect.TypeOf((*settable)(nil)).Elem()

// Fields lists the settings of spec, a pointer to a struct whose Value
// fields carry the tags yaml, flag, default and usage. Nested structs (and
// pointers to them, when not nil) are walked under their own YAML key; a
// field without a yaml tag, or with yaml:"-", is not a setting. It panics
// when spec is not a pointer to a struct (a programming error).
func Fields(spec any) []Field {
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("setting.Fields: %T is not a pointer to a struct", spec))
	}
	var out []Field
	walk(v.Elem(), "", &out)
	return out
}

func walk(v reflect.Value, prefix string, out *[]Field) {
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		key := prefix + name
		fv := v.Field(i)
		if fv.CanAddr() && fv.Addr().Type().Implements(settableType) {
			s := fv.Addr().Interface().(settable)
			*out = append(*out, Field{Key: key, Flag: sf.Tag.Get("flag"), Default: sf.Tag.Get("default"),
				Usage: sf.Tag.Get("usage"), Type: s.typeName(), value: s})
			continue
		}
		switch {
		case fv.Kind() == reflect.Struct:
			walk(fv, key+".", out)
		case fv.Kind() == reflect.Pointer && fv.Type().Elem().Kind() == reflect.Struct && !fv.IsNil():
			walk(fv.Elem(), key+".", out)
		}
	}
}

// ApplyDefaults sets every unset field that declares a default to it
// (Source Default), but for the sections named in skip (key prefixes such
// as "learner.", sections that resolve their own defaults). A default that
// does not parse is a programming error and is returned naming the key.
func ApplyDefaults(spec any, skip ...string) error {
	for _, f := range Fields(spec) {
		if f.IsSet() || f.Default == "" || slices.ContainsFunc(skip, func(p string) bool { return strings.HasPrefix(f.Key, p) }) {
			continue
		}
		if err := f.value.setText(f.Default, Default); err != nil {
			return fmt.Errorf("%s: default: %w", f.Key, err)
		}
	}
	return nil
}

// Set sets the setting at the dotted YAML key from text, by the layer src
// (Override for a --set KEY=VALUE). An unknown key is an error that
// lists the known ones.
func Set(spec any, key, text string, src Source) error {
	fields := Fields(spec)
	for _, f := range fields {
		if f.Key == key {
			if err := f.value.setText(text, src); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
			return nil
		}
	}
	keys := make([]string, len(fields))
	best, bestDist := "", 3 // suggest a key at most 2 edits away
	for i, f := range fields {
		keys[i] = f.Key
		if d := levenshtein.ComputeDistance(key, f.Key); d < bestDist {
			best, bestDist = f.Key, d
		}
	}
	if best == "" { // a key given without its section: rewards.call_cost for rollout.rewards.call_cost
		for _, k := range keys {
			if strings.HasSuffix(k, "."+key) {
				if best != "" {
					best = ""
					break
				}
				best = k
			}
		}
	}
	if best != "" {
		return fmt.Errorf("%q is not a setting; did you mean %s?", key, best)
	}
	slices.Sort(keys)
	return fmt.Errorf("%q is not a setting; the settings are %s", key, strings.Join(keys, ", "))
}

// SetAll applies overrides of the form KEY=VALUE (toolrl train --set), in
// order, by the layer src.
func SetAll(spec any, overrides []string, src Source) error {
	for _, o := range overrides {
		key, text, ok := strings.Cut(o, "=")
		if !ok || key == "" {
			return fmt.Errorf("%q: want KEY=VALUE, e.g. learner.lr=1e-4", o)
		}
		if err := Set(spec, strings.TrimSpace(key), text, src); err != nil {
			return err
		}
	}
	return nil
}

// Overlay copies every set field of upper over lower: both are pointers to
// the same struct type; upper is the higher layer (flags over a file).
func Overlay(lower, upper any) {
	merge(lower, upper, true)
}

// Fill copies every set field of lower into the fields upper leaves unset:
// lower is a lower layer (generation_config.json under a job file).
func Fill(upper, lower any) {
	merge(upper, lower, false)
}

// merge copies src's set Value fields into dst: all of them (over) or only
// into dst's unset ones.
func merge(dst, src any, over bool) {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src)
	if dv.Type() != sv.Type() || dv.Kind() != reflect.Pointer || dv.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("setting: merge of %T and %T", dst, src))
	}
	mergeValue(dv.Elem(), sv.Elem(), over)
}

func mergeValue(d, s reflect.Value, over bool) {
	for i := range d.NumField() {
		df, sf := d.Field(i), s.Field(i)
		if !d.Type().Field(i).IsExported() {
			continue
		}
		if df.Addr().Type().Implements(settableType) {
			if sf.Addr().Interface().(settable).IsSet() && (over || !df.Addr().Interface().(settable).IsSet()) {
				df.Set(sf)
			}
			continue
		}
		switch {
		case df.Kind() == reflect.Struct:
			mergeValue(df, sf, over)
		case df.Kind() == reflect.Pointer && df.Type().Elem().Kind() == reflect.Struct && !sf.IsNil():
			if df.IsNil() {
				df.Set(reflect.New(df.Type().Elem()))
			}
			mergeValue(df.Elem(), sf.Elem(), over)
		}
	}
}

// Name is how an error names the setting at key: its flag ("--group-size")
// when that flag set it, else its key ("group_size"; also after --set).
func Name(spec any, key string) string {
	for _, f := range Fields(spec) {
		if f.Key == key && f.Flag != "" && f.Source() == Flag {
			return "--" + f.Flag
		}
	}
	return key
}

// Entry is one setting's resolved value and the layer that set it.
type Entry struct {
	Key, Value string
	Source     Source
}

// Entries lists spec's settings that are set, with their values and
// sources, in declaration order.
func Entries(spec any) []Entry {
	var out []Entry
	for _, f := range Fields(spec) {
		if f.IsSet() {
			out = append(out, Entry{Key: f.Key, Value: f.Text(), Source: f.Source()})
		}
	}
	return out
}

// Bind registers a flag on fs for every field of spec that declares one.
// Giving the flag sets the field (Source Flag); a flag not given leaves it
// as it is, so the caller can Overlay the bound spec over a file's. The
// help shows the declared default. Bind panics on a flag name used twice
// (pflag's rule).
func Bind(fs *pflag.FlagSet, spec any) {
	for _, f := range Fields(spec) {
		if f.Flag == "" {
			continue
		}
		fl := fs.VarPF(flagValue{f}, f.Flag, "", f.Usage)
		fl.DefValue = f.Default
		if f.Type == "bool" {
			fl.NoOptDefVal = "true"
		}
	}
}

// flagValue is a Field as a pflag.Value.
type flagValue struct{ f Field }

func (v flagValue) String() string {
	if v.f.value == nil || !v.f.IsSet() {
		return v.f.Default
	}
	return v.f.Text()
}

func (v flagValue) Set(s string) error { return v.f.value.setText(s, Flag) }

func (v flagValue) Type() string { return v.f.Type }
