package policystore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LatestFile is the name of the file naming the latest version directory.
const LatestFile = "latest"

// tmpPrefix starts the name of every temporary the store creates in its
// directory; Open removes leftovers with this prefix and nothing else.
const tmpPrefix = ".tmp-"

// ErrNoVersion is returned by Latest when nothing was ever published.
var ErrNoVersion = errors.New("policystore: no version published")

// ErrReadOnly is returned by Publish and Prune on a store opened with
// OpenReadOnly.
var ErrReadOnly = errors.New("policystore: store is open read-only")

// Store is a policy store directory. A writer's Store (Open) is meant for one
// goroutine at a time; a read-only Store (OpenReadOnly) is safe for
// concurrent use, and its readers may live in any process.
type Store struct {
	dir  string
	lock *os.File // nil when read-only
}

// Open opens dir as the store's single writer, creating it if missing. It
// takes an exclusive flock on dir/.lock (released by Close or when the
// process exits) and fails, naming the holder's pid, if another writer holds
// it. It then repairs what a killed writer left: it removes the temporaries
// (names starting ".tmp-") of unfinished publishes and prunes, and when a
// publish was killed after its directory was renamed into place but before
// `latest` was replaced, it points `latest` at that version if Verify
// accepts it (otherwise it leaves the directory, and Publish refuses its
// number).
func Open(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("policystore: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("policystore: create store: %w", err)
	}
	lock, err := lockWriter(abs)
	if err != nil {
		return nil, err
	}
	s := &Store{dir: abs, lock: lock}
	if err := s.removeTemporaries(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.rollForward(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens an existing store dir for reading: Latest, Get and
// Verify. It takes no lock and never writes, so any number of readers in any
// processes may use the store while its writer publishes.
func OpenReadOnly(dir string) (*Store, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("policystore: %w", err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, fmt.Errorf("policystore: open store: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("policystore: open store: %s is not a directory", abs)
	}
	return &Store{dir: abs}, nil
}

// Close releases the writer's lock; it is a no-op on a read-only store.
func (s *Store) Close() error {
	if s.lock == nil {
		return nil
	}
	err := s.lock.Close() // closing the descriptor releases the flock
	s.lock = nil
	return err
}

// Dir returns the store's absolute directory.
func (s *Store) Dir() string { return s.dir }

// Latest returns the version `latest` names, with its manifest. It returns
// ErrNoVersion when nothing was published, and an error naming the directory
// when `latest` names a version that is missing or has no valid manifest. It
// does not re-hash the files: call Verify before trusting their contents.
func (s *Store) Latest() (Version, error) {
	n, err := s.latestNumber()
	if err != nil {
		return Version{}, err
	}
	v, err := s.Get(n)
	if err != nil {
		return Version{}, fmt.Errorf("policystore: %s names %s: %w", filepath.Join(s.dir, LatestFile), versionName(n), err)
	}
	return v, nil
}

// Get returns version n with its manifest, or an error naming the directory
// when it is missing or has no valid manifest. It does not re-hash the
// files (see Verify).
func (s *Store) Get(n int64) (Version, error) {
	dir := filepath.Join(s.dir, versionName(n))
	if _, err := os.Stat(dir); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Version{}, fmt.Errorf("policystore: version %d: %s is missing", n, dir)
		}
		return Version{}, fmt.Errorf("policystore: version %d: %w", n, err)
	}
	m, err := readManifest(dir, n)
	if err != nil {
		return Version{}, err
	}
	return Version{Number: n, Dir: dir, Manifest: m}, nil
}

// OpenVersion returns the version whose directory is dir (any path ending in
// a version directory name, vNNNNNN, e.g. the dir of a Redis policy
// pointer), with its manifest, for a reader that knows the folder but not
// the store. It checks the name and that the manifest is valid and names the
// same version; like Get it does not re-hash the files (see Verify).
func OpenVersion(dir string) (Version, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Version{}, fmt.Errorf("policystore: %w", err)
	}
	n, ok := parseVersionName(filepath.Base(abs))
	if !ok {
		return Version{}, fmt.Errorf("policystore: %s is not a version directory (want a name like v000001)", abs)
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Version{}, fmt.Errorf("policystore: version %d: %s is missing", n, abs)
		}
		return Version{}, fmt.Errorf("policystore: version %d: %w", n, err)
	}
	if !st.IsDir() {
		return Version{}, fmt.Errorf("policystore: version %d: %s is not a directory", n, abs)
	}
	m, err := readManifest(abs, n)
	if err != nil {
		return Version{}, err
	}
	return Version{Number: n, Dir: abs, Manifest: m}, nil
}

// latestNumber reads `latest`: ErrNoVersion when it is absent.
func (s *Store) latestNumber() (int64, error) {
	path := filepath.Join(s.dir, LatestFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, ErrNoVersion
	}
	if err != nil {
		return 0, fmt.Errorf("policystore: read latest: %w", err)
	}
	n, ok := parseVersionName(strings.TrimSpace(string(data)))
	if !ok {
		return 0, fmt.Errorf("policystore: %s holds %q, want a version directory name like v000001", path, data)
	}
	return n, nil
}

// versions returns the numbers of the version directories, ascending.
func (s *Store) versions() ([]int64, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("policystore: list versions: %w", err)
	}
	var ns []int64
	for _, e := range entries {
		if n, ok := parseVersionName(e.Name()); ok && e.IsDir() {
			ns = append(ns, n)
		}
	}
	slices.Sort(ns)
	return ns, nil
}

// removeTemporaries removes what unfinished publishes and prunes left.
func (s *Store) removeTemporaries() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return fmt.Errorf("policystore: list store: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), tmpPrefix) {
			continue
		}
		path := filepath.Join(s.dir, e.Name())
		slog.Info("policystore: removing a leftover of an unfinished publish", "path", path)
		if err := os.RemoveAll(path); err != nil {
			return fmt.Errorf("policystore: remove leftover: %w", err)
		}
	}
	return nil
}

// rollForward completes a publish killed between renaming its directory and
// replacing `latest`: a single writer publishes in increasing order, so such
// a version is the highest directory, above `latest`, with `latest` as its
// parent.
func (s *Store) rollForward() error {
	cur, err := s.latestNumber()
	if errors.Is(err, ErrNoVersion) {
		cur, err = 0, nil
	}
	if err != nil {
		return err
	}
	ns, err := s.versions()
	if err != nil || len(ns) == 0 || ns[len(ns)-1] <= cur {
		return err
	}
	n := ns[len(ns)-1]
	v, err := s.Get(n)
	if err == nil && v.Manifest.Parent != cur {
		err = fmt.Errorf("its parent is %d, latest is %d", v.Manifest.Parent, cur)
	}
	if err == nil {
		err = Verify(context.Background(), v)
	}
	if err != nil {
		slog.Warn("policystore: a version above latest is not complete; leaving it (Publish refuses its number)",
			"dir", filepath.Join(s.dir, versionName(n)), "latest", cur, "err", err)
		return nil
	}
	slog.Info("policystore: completing a publish that was stopped before latest was replaced", "version", n)
	return s.writeLatest(n)
}

// writeLatest atomically replaces `latest` with n's directory name: write a
// temporary, fsync it, rename it over `latest`, fsync the store directory.
func (s *Store) writeLatest(n int64) error {
	f, err := os.CreateTemp(s.dir, tmpPrefix+"latest-")
	if err != nil {
		return fmt.Errorf("policystore: write latest: %w", err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644) // CreateTemp makes it 0600; readers may be other users
	if err == nil {
		_, err = f.WriteString(versionName(n) + "\n")
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(s.dir, LatestFile))
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("policystore: write latest: %w", err)
	}
	return syncDir(s.dir)
}

// syncDir fsyncs a directory, making the creations, renames and removals of
// its entries durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("policystore: fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("policystore: fsync %s: %w", dir, err)
	}
	return nil
}

// versionName is version n's directory name: "v" and at least six digits.
func versionName(n int64) string { return fmt.Sprintf("v%06d", n) }

// parseVersionName parses a directory name versionName writes, refusing any
// other spelling (v1, v0000001) so that a number has one directory.
func parseVersionName(name string) (int64, bool) {
	if len(name) < 7 || name[0] != 'v' {
		return 0, false
	}
	n, err := strconv.ParseInt(name[1:], 10, 64)
	if err != nil || n < 1 || versionName(n) != name {
		return 0, false
	}
	return n, true
}
