package orchestrator

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/stream"
)

// PolicyRef names a published policy version: its number and the folder a
// runner loads it from (a policy store's STORE/vNNNNNN).
type PolicyRef struct {
	// Version is the policy version (≥ 1).
	Version int64
	// Dir is the version's folder, a complete Hugging Face model folder with
	// the store's manifest.json.
	Dir string
}

// PolicySource tells a runner which policy version is the newest one, so
// that it can hot-reload (RunOptions.Policy). The runner polls it between
// groups; it is called from the runner's goroutine only.
type PolicySource interface {
	// Latest returns the newest published version; ok is false (and err
	// nil) while nothing has been published. An error is transient to the
	// runner: it logs it and keeps the loaded version.
	Latest(ctx context.Context) (ref PolicyRef, ok bool, err error)
}

// StorePolicySource offers the `latest` version of a policy store folder.
type StorePolicySource struct {
	store *policystore.Store
}

// NewStorePolicySource opens the store dir read-only (it must exist; it may
// be empty until the learner's first publish).
func NewStorePolicySource(dir string) (*StorePolicySource, error) {
	s, err := policystore.OpenReadOnly(dir)
	if err != nil {
		return nil, err
	}
	return &StorePolicySource{store: s}, nil
}

// Latest reads the store's `latest` and that version's manifest.
func (s *StorePolicySource) Latest(ctx context.Context) (PolicyRef, bool, error) {
	v, err := s.store.Latest()
	if errors.Is(err, policystore.ErrNoVersion) {
		return PolicyRef{}, false, nil
	}
	if err != nil {
		return PolicyRef{}, false, err
	}
	return PolicyRef{Version: v.Number, Dir: v.Dir}, true, nil
}

// String names the source in logs.
func (s *StorePolicySource) String() string { return "policy store " + s.store.Dir() }

// RedisPolicySource offers the version a job's Redis policy pointer
// (toolrl:{job}:policy, set by stream.AnnouncePolicy) names. Its dir must be a
// path this machine can open (a shared filesystem).
type RedisPolicySource struct {
	client goredis.UniversalClient
	keys   stream.Keys
}

// NewRedisPolicySource reads job's policy pointer through client.
func NewRedisPolicySource(client goredis.UniversalClient, job string) (*RedisPolicySource, error) {
	if err := stream.ValidateJob(job); err != nil {
		return nil, err
	}
	return &RedisPolicySource{client: client, keys: stream.JobKeys(job)}, nil
}

// Latest reads the pointer (stream.ReadPolicy).
func (s *RedisPolicySource) Latest(ctx context.Context) (PolicyRef, bool, error) {
	p, ok, err := stream.ReadPolicy(ctx, s.client, s.keys)
	if err != nil || !ok {
		return PolicyRef{}, false, err
	}
	return PolicyRef{Version: p.Version, Dir: p.Dir}, true, nil
}

// String names the source in logs.
func (s *RedisPolicySource) String() string { return fmt.Sprintf("redis key %s", s.keys.Policy) }

// WatchRedis is the --watch value that follows the job's Redis policy
// pointer (RedisPolicySource) instead of a policy store folder.
const WatchRedis = "redis"

// WatchError is a --watch value that names no usable source: the user's to
// fix (the CLI exits 2).
type WatchError struct{ Err error }

func (e *WatchError) Error() string { return e.Err.Error() }
func (e *WatchError) Unwrap() error { return e.Err }

// OpenPolicySource is the source of hot reloads a --watch value names: none
// for "", the job's Redis pointer for WatchRedis (client must then be set),
// else a policy store folder. Its errors are *WatchError.
func OpenPolicySource(watch string, client goredis.UniversalClient, job string) (PolicySource, error) {
	switch watch {
	case "":
		return nil, nil
	case WatchRedis:
		if client == nil {
			return nil, &WatchError{errors.New("--watch redis needs --redis URL, --job J and --worker (it follows the job's policy pointer)")}
		}
		src, err := NewRedisPolicySource(client, job)
		if err != nil {
			return nil, &WatchError{err}
		}
		return src, nil
	}
	src, err := NewStorePolicySource(watch)
	if err != nil {
		return nil, &WatchError{fmt.Errorf("--watch %s: %v", watch, err)}
	}
	return src, nil
}
