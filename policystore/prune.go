package policystore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
)

// Prune removes the oldest published versions so that at most keep (>= 1)
// remain, and returns the numbers it removed, ascending. It never removes the
// latest version nor a directory above it. Each version is first renamed to a
// temporary name (a reader sees it whole or not at all) and then deleted; a
// reader still loading a pruned version's files may fail, so keep at least
// 2 when readers load older versions than the latest.
func (s *Store) Prune(keep int) ([]int64, error) {
	if s.lock == nil {
		return nil, ErrReadOnly
	}
	if keep < 1 {
		return nil, fmt.Errorf("policystore: prune: keep is %d, want >= 1 (the latest is never removed)", keep)
	}
	latest, err := s.latestNumber()
	if errors.Is(err, ErrNoVersion) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ns, err := s.versions()
	if err != nil {
		return nil, err
	}
	var published []int64
	for _, n := range ns {
		if n <= latest {
			published = append(published, n)
		}
	}
	if len(published) <= keep {
		return nil, nil
	}
	var removed []int64
	for _, n := range published[:len(published)-keep] {
		dir := filepath.Join(s.dir, versionName(n))
		tmp := filepath.Join(s.dir, tmpPrefix+"prune-"+versionName(n)+"-"+strconv.FormatUint(rand.Uint64(), 36))
		err := os.Rename(dir, tmp)
		if err == nil {
			err = syncDir(s.dir)
		}
		if err == nil {
			err = os.RemoveAll(tmp)
		}
		if err != nil {
			return removed, fmt.Errorf("policystore: prune %s: %w", dir, err)
		}
		removed = append(removed, n)
	}
	return removed, nil
}
