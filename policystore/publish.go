package policystore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Publish writes version n and makes it the latest. write fills a fresh
// temporary directory with the model folder (config.json, tokenizer files,
// model.safetensors, onnx/model.onnx, optimizer state, ...; regular files and
// directories only, and no manifest.json); then Publish hashes and fsyncs
// every file and directory, writes and fsyncs manifest.json (meta, when not
// empty, must be valid JSON; it is stored compacted), renames the directory to
// vNNNNNN, fsyncs the store, and atomically replaces `latest`.
//
// It refuses n < 1, n <= the latest version, and a number whose directory
// exists. When write fails, ctx is done before the rename, or anything else
// fails before the rename, the temporary is removed and `latest` is
// untouched. If the process dies partway, `latest` still names the previous
// complete version (or is absent), and the next Open cleans up (see Open).
func (s *Store) Publish(ctx context.Context, n int64, meta json.RawMessage, write func(dir string) error) (Version, error) {
	if s.lock == nil {
		return Version{}, ErrReadOnly
	}
	if n < 1 {
		return Version{}, fmt.Errorf("policystore: publish version %d: versions start at 1", n)
	}
	if len(meta) > 0 && !json.Valid(meta) {
		return Version{}, fmt.Errorf("policystore: publish version %d: meta is not valid JSON", n)
	}
	parent, err := s.latestNumber()
	if errors.Is(err, ErrNoVersion) {
		parent, err = 0, nil
	}
	if err != nil {
		return Version{}, err
	}
	if n <= parent {
		return Version{}, fmt.Errorf("policystore: publish version %d: latest is already %d (versions must increase)", n, parent)
	}
	final := filepath.Join(s.dir, versionName(n))
	if _, err := os.Lstat(final); err == nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: %s already exists (latest is %d)", n, final, parent)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	if err := ctx.Err(); err != nil {
		return Version{}, err
	}

	tmp, err := os.MkdirTemp(s.dir, tmpPrefix+versionName(n)+"-")
	if err != nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	// MkdirTemp makes the directory 0700; actors running as other users
	// read published versions.
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.RemoveAll(tmp)
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			os.RemoveAll(tmp)
		}
	}()
	if err := write(tmp); err != nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: write: %w", n, err)
	}
	m := Manifest{Schema: ManifestSchema, Version: n, Parent: parent, Meta: meta}
	if m.Files, err = sealFiles(ctx, tmp); err != nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	m.Created = time.Now().UTC().Truncate(time.Second)
	if err := writeManifest(tmp, m); err != nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	// Return the manifest exactly as readers will decode it (meta included).
	if m, err = readManifest(tmp, n); err != nil {
		return Version{}, err
	}
	if err := ctx.Err(); err != nil {
		return Version{}, err
	}
	if err := os.Rename(tmp, final); err != nil {
		return Version{}, fmt.Errorf("policystore: publish version %d: %w", n, err)
	}
	renamed = true
	// From here on the version is complete on disk; a failure leaves it
	// unpublished, and the next Open points latest at it.
	if err := syncDir(s.dir); err != nil {
		return Version{}, err
	}
	if err := s.writeLatest(n); err != nil {
		return Version{}, err
	}
	return Version{Number: n, Dir: final, Manifest: m}, nil
}

// sealFiles fsyncs every file and directory under dir and returns the files'
// manifest entries, sorted by path. It refuses anything but regular files and
// directories, and a manifest.json written by the caller.
func sealFiles(ctx context.Context, dir string) ([]File, error) {
	files := []File{}
	var dirs []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			dirs = append(dirs, path)
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file (%s)", rel, d.Type())
		case rel == ManifestFile:
			return fmt.Errorf("the write function created %s, which the store writes", ManifestFile)
		}
		f, err := hashFile(path, true)
		if err != nil {
			return err
		}
		f.Path = rel
		files = append(files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, d := range dirs {
		if err := syncDir(d); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// writeManifest writes and fsyncs dir/manifest.json, then fsyncs dir.
func writeManifest(dir string, m Manifest) error {
	data, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	path := filepath.Join(dir, ManifestFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	_, err = f.Write(append(data, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	return syncDir(dir)
}
