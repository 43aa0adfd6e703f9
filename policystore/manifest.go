package policystore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// ManifestSchema is the schema of manifest.json.
const ManifestSchema = "toolrl.policy/v1"

// ManifestFile is the name of the manifest in a version directory. The store
// writes it last; a caller's write function must not create it.
const ManifestFile = "manifest.json"

// QuantizedForm is the folder inside a version that holds its quantized copy
// for actors, when the learner publishes one (a train config's
// rollout_quantization, toolrl learn --rollout-quantization): a complete model
// folder (config.json recording the quantization, tokenizer files,
// onnx/model.onnx) beside the version's own float32 files, which the learner
// resumes from. The manifest lists its files like any other, so Verify covers
// both forms.
const QuantizedForm = "quantized"

// Manifest describes one published version (manifest.json).
type Manifest struct {
	// Schema is ManifestSchema.
	Schema string `json:"schema"`
	// Version is the version number (>= 1).
	Version int64 `json:"version"`
	// Parent is the version that was latest when this one was published, 0
	// when it is the first.
	Parent int64 `json:"parent"`
	// Created is when the store wrote the manifest (UTC, RFC 3339).
	Created time.Time `json:"created"`
	// Files lists every file of the version but the manifest itself, sorted
	// by path.
	Files []File `json:"files"`
	// Meta is the caller's opaque JSON (training step, metrics, ...); absent
	// when the caller passed none.
	Meta json.RawMessage `json:"meta,omitempty"`
}

// File is one file of a version.
type File struct {
	// Path is relative to the version directory, with forward slashes.
	Path string `json:"path"`
	// Size is in bytes.
	Size int64 `json:"size"`
	// SHA256 is the lowercase hex SHA-256 of the contents.
	SHA256 string `json:"sha256"`
}

// Version is one published version as a reader finds it.
type Version struct {
	// Number is the version number (>= 1).
	Number int64
	// Dir is the absolute path of the version's directory (STORE/vNNNNNN),
	// a complete Hugging Face model folder.
	Dir string
	// Manifest is the version's manifest.json as read from Dir.
	Manifest Manifest
}

// readManifest reads and checks dir's manifest.json for version n.
func readManifest(dir string, n int64) (Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if errors.Is(err, fs.ErrNotExist) {
		return Manifest{}, fmt.Errorf("policystore: %s has no %s (not a complete version)", dir, ManifestFile)
	}
	if err != nil {
		return Manifest{}, fmt.Errorf("policystore: read manifest: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return Manifest{}, fmt.Errorf("policystore: %s: malformed %s: %w", dir, ManifestFile, err)
	}
	switch {
	case m.Schema != ManifestSchema:
		return Manifest{}, fmt.Errorf("policystore: %s: %s schema is %q, want %q", dir, ManifestFile, m.Schema, ManifestSchema)
	case m.Version != n:
		return Manifest{}, fmt.Errorf("policystore: %s: %s says version %d, want %d", dir, ManifestFile, m.Version, n)
	}
	for _, f := range m.Files {
		if !filepath.IsLocal(filepath.FromSlash(f.Path)) || f.Path == ManifestFile {
			return Manifest{}, fmt.Errorf("policystore: %s: %s lists a bad path %q", dir, ManifestFile, f.Path)
		}
	}
	return m, nil
}

// Verify re-hashes every file of v against its manifest. It returns an
// error naming the first file that is missing, has another size or hash, or
// is not listed in the manifest; nil means the directory holds exactly the
// files the manifest lists. It reads every byte (seconds for a large model)
// and stops early, returning ctx's error, when ctx is done.
func Verify(ctx context.Context, v Version) error {
	listed := make(map[string]bool, len(v.Manifest.Files))
	for _, f := range v.Manifest.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		listed[f.Path] = true
		got, err := hashFile(filepath.Join(v.Dir, filepath.FromSlash(f.Path)), false)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("policystore: version %d: %s is missing", v.Number, f.Path)
		case err != nil:
			return fmt.Errorf("policystore: version %d: %w", v.Number, err)
		case got.Size != f.Size:
			return fmt.Errorf("policystore: version %d: %s has %d bytes, manifest says %d", v.Number, f.Path, got.Size, f.Size)
		case got.SHA256 != f.SHA256:
			return fmt.Errorf("policystore: version %d: %s has sha256 %s, manifest says %s", v.Number, f.Path, got.SHA256, f.SHA256)
		}
	}
	return filepath.WalkDir(v.Dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("policystore: version %d: %w", v.Number, err)
		}
		rel, _ := filepath.Rel(v.Dir, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("policystore: version %d: %s is not a regular file (%s)", v.Number, rel, d.Type())
		}
		if rel == ManifestFile || listed[rel] {
			return nil
		}
		return fmt.Errorf("policystore: version %d: %s is not in the manifest", v.Number, rel)
	})
}

// hashFile returns path's size and SHA-256, fsyncing it first when sync is
// set. It refuses anything but a regular file (a symlink could point outside
// the version).
func hashFile(path string, sync bool) (File, error) {
	f, err := os.Open(path)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return File{}, err
	}
	if !st.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s is not a regular file (%s)", path, st.Mode().Type())
	}
	if sync {
		if err := f.Sync(); err != nil {
			return File{}, fmt.Errorf("fsync %s: %w", path, err)
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return File{}, fmt.Errorf("read %s: %w", path, err)
	}
	return File{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
