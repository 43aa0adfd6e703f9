package policystore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// writeModel returns a write function that lays out a small Hugging Face
// model folder whose weights are size pseudo-random bytes seeded by seed.
func writeModel(size int, seed uint64) func(dir string) error {
	return func(dir string) error {
		weights := make([]byte, size)
		r := rand.New(rand.NewPCG(seed, 1))
		for i := range weights {
			weights[i] = byte(r.Uint32())
		}
		files := map[string][]byte{
			"config.json":       []byte(`{"model_type":"llama","seed":` + strconv.FormatUint(seed, 10) + `}`),
			"tokenizer.json":    []byte(`{"version":"1.0"}`),
			"model.safetensors": weights,
			"onnx/model.onnx":   weights[:size/2],
			"optimizer.bin":     weights[size/2:],
		}
		for name, data := range files {
			path := filepath.Join(dir, filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(path, data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
}

func openStore(t *testing.T, dir string) *Store {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func publish(t *testing.T, s *Store, n int64) Version {
	t.Helper()
	v, err := s.Publish(context.Background(), n, nil, writeModel(4096, uint64(n)))
	if err != nil {
		t.Fatalf("Publish(%d): %v", n, err)
	}
	return v
}

func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("error %q does not mention %q", err, p)
		}
	}
}

func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var tmp []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tmpPrefix) {
			tmp = append(tmp, e.Name())
		}
	}
	return tmp
}

func TestPublishLatestVerify(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "a", "store")
	s := openStore(t, dir)
	if _, err := s.Latest(); !errors.Is(err, ErrNoVersion) {
		t.Fatalf("Latest of an empty store: %v, want ErrNoVersion", err)
	}
	meta := json.RawMessage(`{"step":10,"loss":0.5}`)
	v1, err := s.Publish(ctx, 1, meta, writeModel(10000, 1))
	if err != nil {
		t.Fatal(err)
	}
	if v1.Number != 1 || v1.Dir != filepath.Join(s.Dir(), "v000001") || v1.Manifest.Parent != 0 ||
		v1.Manifest.Schema != ManifestSchema || string(v1.Manifest.Meta) != string(meta) || v1.Manifest.Created.IsZero() {
		t.Fatalf("Publish returned %+v", v1)
	}
	var paths []string
	for _, f := range v1.Manifest.Files {
		paths = append(paths, f.Path)
		data, err := os.ReadFile(filepath.Join(v1.Dir, f.Path))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(data)
		if f.Size != int64(len(data)) || f.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: manifest %d %s, file %d %x", f.Path, f.Size, f.SHA256, len(data), sum)
		}
	}
	want := []string{"config.json", "model.safetensors", "onnx/model.onnx", "optimizer.bin", "tokenizer.json"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("manifest paths %q, want %q", paths, want)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, LatestFile)); string(data) != "v000001\n" {
		t.Fatalf("latest holds %q", data)
	}
	got, err := s.Latest()
	if err != nil || !reflect.DeepEqual(got, v1) {
		t.Fatalf("Latest = %+v, %v; want %+v", got, err, v1)
	}
	if err := Verify(ctx, got); err != nil {
		t.Fatal(err)
	}

	v2 := publish(t, s, 2)
	if v2.Manifest.Parent != 1 {
		t.Fatalf("parent of 2 is %d", v2.Manifest.Parent)
	}
	r, err := OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err = r.Latest()
	if err != nil || got.Number != 2 || Verify(ctx, got) != nil {
		t.Fatalf("reader's Latest = %+v, %v", got, err)
	}
	if old, err := r.Get(1); err != nil || !reflect.DeepEqual(old, v1) {
		t.Fatalf("Get(1) = %+v, %v", old, err)
	}
	if _, err := r.Publish(ctx, 3, nil, writeModel(10, 3)); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Publish on a read-only store: %v", err)
	}
	if _, err := r.Prune(1); !errors.Is(err, ErrReadOnly) {
		t.Fatalf("Prune on a read-only store: %v", err)
	}
	if _, err := OpenReadOnly(filepath.Join(dir, "nope")); err == nil {
		t.Fatal("OpenReadOnly of a missing directory succeeded")
	}
	if tmp := leftovers(t, dir); len(tmp) > 0 {
		t.Fatalf("temporaries left: %q", tmp)
	}
}

func TestVerifyNamesWhatDiffers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	v := publish(t, s, 1)
	weights := filepath.Join(v.Dir, "model.safetensors")
	data, _ := os.ReadFile(weights)
	restore := func() {
		t.Helper()
		if err := os.WriteFile(weights, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := Verify(ctx, v); err != nil {
			t.Fatalf("after restoring: %v", err)
		}
	}

	flipped := append([]byte(nil), data...)
	flipped[100] ^= 1
	os.WriteFile(weights, flipped, 0o644)
	wantErr(t, Verify(ctx, v), "model.safetensors", "sha256")
	restore()

	os.WriteFile(weights, data[:len(data)-1], 0o644)
	wantErr(t, Verify(ctx, v), "model.safetensors", "bytes")
	restore()

	onnx := filepath.Join(v.Dir, "onnx", "model.onnx")
	onnxData, _ := os.ReadFile(onnx)
	os.Remove(onnx)
	wantErr(t, Verify(ctx, v), "onnx/model.onnx", "missing")
	os.WriteFile(onnx, onnxData, 0o644)

	extra := filepath.Join(v.Dir, "onnx", "extra.bin")
	os.WriteFile(extra, []byte("x"), 0o644)
	wantErr(t, Verify(ctx, v), "onnx/extra.bin", "not in the manifest")
	os.Remove(extra)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := Verify(cancelled, v); !errors.Is(err, context.Canceled) {
		t.Fatalf("Verify with a cancelled context: %v", err)
	}

	// latest naming a missing directory, a directory without a manifest,
	// and a malformed latest are errors naming what is wrong.
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("v000009\n"), 0o644)
	wantErr(t, errOf(s.Latest()), "v000009", "missing")
	os.Mkdir(filepath.Join(dir, "v000009"), 0o755)
	wantErr(t, errOf(s.Latest()), "v000009", "no manifest.json")
	os.WriteFile(filepath.Join(dir, "v000009", ManifestFile), []byte(`{"schema":"toolrl.policy/v1","version":8}`), 0o644)
	wantErr(t, errOf(s.Latest()), "v000009", "version 8")
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("9\n"), 0o644)
	wantErr(t, errOf(s.Latest()), LatestFile, `"9\n"`)
}

func errOf(_ Version, err error) error { return err }

func TestPublishRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	publish(t, s, 3)
	wantErr(t, errOf(s.Publish(ctx, 3, nil, writeModel(10, 3))), "latest is already 3")
	wantErr(t, errOf(s.Publish(ctx, 2, nil, writeModel(10, 2))), "latest is already 3")
	wantErr(t, errOf(s.Publish(ctx, 0, nil, writeModel(10, 0))), "start at 1")
	os.Mkdir(filepath.Join(dir, "v000005"), 0o755)
	wantErr(t, errOf(s.Publish(ctx, 5, nil, writeModel(10, 5))), "v000005", "already exists")
	wantErr(t, errOf(s.Publish(ctx, 6, json.RawMessage(`{"a":`), writeModel(10, 6))), "meta")
	wantErr(t, errOf(s.Publish(ctx, 6, nil, func(string) error { return errors.New("disk full") })), "disk full")
	wantErr(t, errOf(s.Publish(ctx, 6, nil, func(d string) error {
		return os.WriteFile(filepath.Join(d, ManifestFile), []byte("{}"), 0o644)
	})), ManifestFile)
	wantErr(t, errOf(s.Publish(ctx, 6, nil, func(d string) error {
		return os.Symlink("/etc/passwd", filepath.Join(d, "config.json"))
	})), "config.json", "not a regular file")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Publish(cancelled, 6, nil, writeModel(10, 6)); !errors.Is(err, context.Canceled) {
		t.Fatalf("Publish with a cancelled context: %v", err)
	}
	if tmp := leftovers(t, dir); len(tmp) > 0 {
		t.Fatalf("refused publishes left %q", tmp)
	}
	if v, err := s.Latest(); err != nil || v.Number != 3 {
		t.Fatalf("Latest after refusals = %d, %v", v.Number, err)
	}
	if v := publish(t, s, 6); v.Manifest.Parent != 3 {
		t.Fatalf("parent of 6 is %d", v.Manifest.Parent)
	}
}

func TestOpenRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	publish(t, s, 1)
	s.Close()
	os.MkdirAll(filepath.Join(dir, ".tmp-v000002-123", "onnx"), 0o755)
	os.WriteFile(filepath.Join(dir, ".tmp-v000002-123", "onnx", "model.onnx"), []byte("half"), 0o644)
	os.WriteFile(filepath.Join(dir, ".tmp-latest-456"), []byte("v0000"), 0o644)
	os.Mkdir(filepath.Join(dir, ".tmp-prune-v000001-789"), 0o755)
	// Not the store's: left alone.
	os.Mkdir(filepath.Join(dir, "notes"), 0o755)
	os.WriteFile(filepath.Join(dir, ".tmpfile"), nil, 0o644)

	s = openStore(t, dir)
	if tmp := leftovers(t, dir); len(tmp) > 0 {
		t.Fatalf("Open left %q", tmp)
	}
	for _, keep := range []string{"notes", ".tmpfile", "v000001", LatestFile} {
		if _, err := os.Stat(filepath.Join(dir, keep)); err != nil {
			t.Errorf("Open removed %s: %v", keep, err)
		}
	}
	if v := publish(t, s, 2); v.Manifest.Parent != 1 {
		t.Fatalf("parent of 2 is %d", v.Manifest.Parent)
	}
}

// A publish killed after its rename but before latest was replaced is
// completed by the next Open when the version verifies, and left (its number
// refused) when it does not.
func TestOpenCompletesRenamedVersion(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openStore(t, dir)
	publish(t, s, 1)
	publish(t, s, 2)
	s.Close()
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("v000001\n"), 0o644)
	s = openStore(t, dir)
	if v, err := s.Latest(); err != nil || v.Number != 2 || Verify(ctx, v) != nil {
		t.Fatalf("after Open, Latest = %d, %v; want 2", v.Number, err)
	}

	v3 := publish(t, s, 3)
	s.Close()
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("v000002\n"), 0o644)
	os.Truncate(filepath.Join(v3.Dir, "model.safetensors"), 10)
	s = openStore(t, dir)
	if v, err := s.Latest(); err != nil || v.Number != 2 {
		t.Fatalf("after Open with a corrupt v3, Latest = %d, %v; want 2", v.Number, err)
	}
	wantErr(t, errOf(s.Publish(ctx, 3, nil, writeModel(10, 3))), "v000003", "already exists")
	if v := publish(t, s, 4); v.Manifest.Parent != 2 {
		t.Fatalf("parent of 4 is %d", v.Manifest.Parent)
	}
}

func TestPrune(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	if removed, err := s.Prune(1); err != nil || len(removed) != 0 {
		t.Fatalf("Prune of an empty store = %v, %v", removed, err)
	}
	for n := int64(1); n <= 5; n++ {
		publish(t, s, n)
	}
	wantErr(t, errOf2(s.Prune(0)), "keep")
	if removed, err := s.Prune(10); err != nil || len(removed) != 0 {
		t.Fatalf("Prune(10) = %v, %v", removed, err)
	}
	removed, err := s.Prune(2)
	if err != nil || !reflect.DeepEqual(removed, []int64{1, 2, 3}) {
		t.Fatalf("Prune(2) = %v, %v", removed, err)
	}
	if ns, _ := s.versions(); !reflect.DeepEqual(ns, []int64{4, 5}) {
		t.Fatalf("versions after Prune(2): %v", ns)
	}
	// Latest is kept even when it is not the highest directory.
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("v000004\n"), 0o644)
	if removed, err := s.Prune(1); err != nil || len(removed) != 0 {
		t.Fatalf("Prune(1) with latest 4 below 5 = %v, %v", removed, err)
	}
	os.WriteFile(filepath.Join(dir, LatestFile), []byte("v000005\n"), 0o644)
	if removed, err := s.Prune(1); err != nil || !reflect.DeepEqual(removed, []int64{4}) {
		t.Fatalf("Prune(1) = %v, %v", removed, err)
	}
	if v, err := s.Latest(); err != nil || v.Number != 5 || Verify(context.Background(), v) != nil {
		t.Fatalf("Latest after Prune = %d, %v", v.Number, err)
	}
	if tmp := leftovers(t, dir); len(tmp) > 0 {
		t.Fatalf("Prune left %q", tmp)
	}
}

func errOf2(_ []int64, err error) error { return err }

func TestSecondWriterRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(dir)
	wantErr(t, err, "another writer", fmt.Sprintf("pid %d", os.Getpid()))
	if _, err := OpenReadOnly(dir); err != nil {
		t.Fatalf("a reader beside the writer: %v", err)
	}
	s.Close()
	s2, err := Open(dir)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

// TestPublishedVersionIsWorldReadable: actors running as another user read
// the version directory and latest (MkdirTemp and CreateTemp make them 0700
// and 0600).
func TestPublishedVersionIsWorldReadable(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := s.Publish(context.Background(), 1, nil, func(dir string) error {
		return os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{v.Dir: 0o755, filepath.Join(s.Dir(), LatestFile): 0o644} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", path, st.Mode().Perm(), want)
		}
	}
}
