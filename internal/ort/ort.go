// Package ort finds the ONNX Runtime shared library and initialises the
// process-wide onnxruntime_go environment. It is the only place in toolrl that
// knows where the library lives; every package that runs a model calls Init.
package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	ortgo "github.com/yalue/onnxruntime_go"
)

// EnvLibrary is the environment variable that names the library explicitly.
const EnvLibrary = "ONNXRUNTIME_LIB"

// libName is the file the npm package onnxruntime-node ships and `make setup`
// extracts into .deps/onnxruntime/.
const libName = "libonnxruntime.so.1"

// ErrNotFound is returned (wrapped) when no library could be found.
var ErrNotFound = errors.New("onnxruntime shared library not found (run `make setup`, or set " + EnvLibrary + ")")

// The ONNX Runtime environment is process-global in the C API, so its
// initialisation state is too: this is the one piece of package state in
// toolrl, and it is guarded by a sync.Once.
var (
	initOnce sync.Once
	initErr  error
	initPath string
)

// LibraryPath returns the library Init loads (or would load), searching in
// order: $ONNXRUNTIME_LIB; .deps/onnxruntime/libonnxruntime.so.1 under the
// module root (found by walking up from the working directory to go.mod) and
// under the executable's directory and its parent; then the system paths.
func LibraryPath() (string, error) {
	if p := os.Getenv(EnvLibrary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvLibrary, p, err)
		}
		return p, nil
	}
	for _, c := range candidates() {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	return "", ErrNotFound
}

func candidates() []string {
	var out []string
	if wd, err := os.Getwd(); err == nil {
		if root, ok := moduleRoot(wd); ok {
			out = append(out, filepath.Join(root, ".deps", "onnxruntime", libName))
		}
	}
	if exe, err := os.Executable(); err == nil {
		if resolved, err := filepath.EvalSymlinks(exe); err == nil {
			exe = resolved
		}
		dir := filepath.Dir(exe)
		out = append(out,
			filepath.Join(dir, ".deps", "onnxruntime", libName),
			filepath.Join(dir, "..", ".deps", "onnxruntime", libName),
			filepath.Join(dir, libName),
		)
	}
	for _, sys := range []string{"/usr/local/lib", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/opt/onnxruntime/lib"} {
		out = append(out, filepath.Join(sys, libName), filepath.Join(sys, "libonnxruntime.so"))
	}
	return out
}

// moduleRoot walks up from dir to the directory holding go.mod.
func moduleRoot(dir string) (string, bool) {
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, true
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", false
		}
		dir = parent
	}
}

// Init loads the library and initialises the environment once per process.
// It is safe to call from many goroutines; every call returns the first
// call's result.
func Init() error {
	initOnce.Do(func() {
		path, err := LibraryPath()
		if err != nil {
			initErr = err
			return
		}
		initPath = path
		ortgo.SetSharedLibraryPath(path)
		if err := ortgo.InitializeEnvironment(ortgo.WithLogLevelError()); err != nil {
			initErr = fmt.Errorf("initialise onnxruntime from %s: %w", path, err)
		}
	})
	return initErr
}

// Version returns the loaded ONNX Runtime version (e.g. "1.30.0"), or "" before
// a successful Init.
func Version() string {
	if !ortgo.IsInitialized() {
		return ""
	}
	return ortgo.GetVersion()
}

// LoadedPath returns the library path Init loaded, or "" before Init.
func LoadedPath() string { return initPath }
