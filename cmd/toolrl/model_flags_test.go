package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestModelTrainRefusesNonPositiveFlags: --log-every and --snapshot-every
// at 0 or below were silently 50 and "no snapshot"; every count flag of
// model train below 1, a learning rate that is not > 0 and --snapshot-every
// without --snapshot-dir are usage errors naming the flag, before any
// tokenizer is read or any training runs.
func TestModelTrainRefusesNonPositiveFlags(t *testing.T) {
	out := filepath.Join(t.TempDir(), "m")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--log-every", "0"}, "--log-every 0"},
		{[]string{"--log-every", "-5"}, "--log-every -5"},
		{[]string{"--snapshot-every", "0", "--snapshot-dir", out}, "--snapshot-every 0"},
		{[]string{"--snapshot-every", "-1", "--snapshot-dir", out}, "--snapshot-every -1"},
		{[]string{"--snapshot-every", "10"}, "--snapshot-every needs --snapshot-dir"},
		{[]string{"--steps", "0"}, "--steps 0"},
		{[]string{"--batch", "-2"}, "--batch -2"},
		{[]string{"--heads", "0"}, "--heads 0"},
		{[]string{"--lr", "0"}, "--lr 0"},
		{[]string{"--lr", "-1e-3"}, "--lr -0.001"},
		{[]string{"--mix", "sparse"}, `--mix: "sparse", want default or overcall`},
	} {
		args := append([]string{"model", "train", "--out", out}, c.args...)
		_, _, err := runToolrl(t, args...)
		wantUsageError(t, args, err, c.want)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a refused model train wrote %s (%v)", out, err)
	}
}

// TestModelBuildRefusesOutIntoTheCheckpoint: --out naming the
// --from-safetensors folder (spelt differently or through a symlink) would
// overwrite the checkpoint's config.json and weights while they are read.
func TestModelBuildRefusesOutIntoTheCheckpoint(t *testing.T) {
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ckpt")
	if err := os.Mkdir(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	sym := filepath.Join(dir, "sym")
	if err := os.Symlink(ckpt, sym); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{ckpt, filepath.Join(dir, ".", "ckpt") + "/", sym} {
		args := []string{"model", "build", "--from-safetensors", ckpt, "--out", out}
		_, _, err := runToolrl(t, args...)
		wantUsageError(t, args, err, "--out", "--from-safetensors", "same file")
	}
}
