package main

import (
	"errors"
	"strings"
	"testing"
)

// TestBenchActorRefusesBadFlags: each count flag refuses a negative (and 0
// where 0 means nothing) with its name, before any model is loaded.
func TestBenchActorRefusesBadFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--prompt-len", "0"}, "--prompt-len 0: want ≥ 1"},
		{[]string{"--prompt-len", "-3"}, "--prompt-len -3: want ≥ 1"},
		{[]string{"--new-tokens", "0"}, "--new-tokens 0: want ≥ 1"},
		{[]string{"--new-tokens", "-1"}, "--new-tokens -1: want ≥ 1"},
		{[]string{"--peer-g", "0"}, "--peer-g 0: want ≥ 1"},
		{[]string{"--peer-g", "-8"}, "--peer-g -8: want ≥ 1"},
		{[]string{"--peer-repeats", "0"}, "--peer-repeats 0: want ≥ 1"},
		{[]string{"--threads", "-1"}, "--threads -1: want ≥ 0 (0: ONNX Runtime's default)"},
		{[]string{"--tools-every", "-2"}, "--tools-every -2: want ≥ 0"},
		{[]string{"--rss", "-5"}, "--rss -5: want ≥ 0"},
		{[]string{"--rss", "12"}, "--rss 12: want a multiple of 8"},
	} {
		args := append([]string{"bench", "actor", "--model", "/nonexistent/model"}, c.args...)
		_, _, err := runToolrl(t, args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want a usage error with %q", c.args, err, c.want)
		}
	}
}

// TestBenchActorORTConfigFlag: a malformed --ort-config entry is a flag
// error naming the flag (bench's TestActorSessionConfig checks that the
// entries reach ONNX Runtime).
func TestBenchActorORTConfigFlag(t *testing.T) {
	if _, _, err := runToolrl(t, "bench", "actor", "--model", "/nonexistent/model", "--ort-config", "no-equals-sign"); err == nil || !strings.Contains(err.Error(), "ort-config") {
		t.Errorf("a malformed entry: err = %v, want one naming --ort-config", err)
	}
}
