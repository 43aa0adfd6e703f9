package stream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// ErrPolicyNotNewer is returned (wrapped) by AnnouncePolicy when the job's
// stored policy version is already at or above the announced one.
var ErrPolicyNotNewer = errors.New("redis: policy version is not newer than the stored one")

// PolicyPointer is the value of Keys.Policy: where actors find the latest
// published policy version.
type PolicyPointer struct {
	// Version is the policy version (>= 1).
	Version int64 `json:"version"`
	// Dir is the version's folder (STORE/vNNNNNN of a policystore), as a path
	// the actors can open.
	Dir string `json:"dir"`
	// PublishedAt is when the version was published.
	PublishedAt time.Time `json:"published_at"`
}

// announceRetries bounds how often AnnouncePolicy retries after another
// writer changed the keys between its WATCH and its EXEC.
const announceRetries = 64

// AnnouncePolicy sets keys.Policy to p and keys.PolicyVersion to p.Version in
// one MULTI/EXEC, guarded by WATCH on both keys: if either key already holds
// a version >= p.Version it writes nothing and returns an error wrapping
// ErrPolicyNotNewer (re-announcing the same version after a restart is thus
// refused, and the caller may ignore it). A stored pointer that does not
// decode is an error too, and is left as it is. The keys share the job's
// hash tag, so this works on a Redis Cluster. Safe for concurrent use; of
// concurrent announcements the highest version wins.
func AnnouncePolicy(ctx context.Context, client goredis.UniversalClient, keys Keys, p PolicyPointer) error {
	if keys.Policy == "" || keys.PolicyVersion == "" {
		return fmt.Errorf("redis: announce policy: keys have no Policy/PolicyVersion key (use JobKeys)")
	}
	if p.Version < 1 || p.Dir == "" {
		return fmt.Errorf("redis: announce policy to %s: version %d, dir %q: want version >= 1 and a dir", keys.Policy, p.Version, p.Dir)
	}
	data, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("redis: announce policy to %s: %w", keys.Policy, err)
	}
	for attempt := 0; attempt < announceRetries; attempt++ {
		err = client.Watch(ctx, func(tx *goredis.Tx) error {
			stored, err := storedPolicyVersion(ctx, tx, keys)
			if err != nil {
				return err
			}
			if stored >= p.Version {
				return fmt.Errorf("redis: announce policy %d to %s: stored version is %d: %w", p.Version, keys.Policy, stored, ErrPolicyNotNewer)
			}
			_, err = tx.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
				pipe.Set(ctx, keys.Policy, data, 0)
				pipe.Set(ctx, keys.PolicyVersion, strconv.FormatInt(p.Version, 10), 0)
				return nil
			})
			return err
		}, keys.Policy, keys.PolicyVersion)
		if !errors.Is(err, goredis.TxFailedErr) {
			return err
		}
	}
	return fmt.Errorf("redis: announce policy %d to %s: aborted %d times by concurrent writers: %w", p.Version, keys.Policy, announceRetries, err)
}

// storedPolicyVersion returns the higher of the versions in keys.Policy and
// keys.PolicyVersion, 0 where a key is absent.
func storedPolicyVersion(ctx context.Context, tx *goredis.Tx, keys Keys) (int64, error) {
	p, _, err := readPolicy(ctx, tx, keys)
	if err != nil {
		return 0, err
	}
	v, err := tx.Get(ctx, keys.PolicyVersion).Int64()
	if errors.Is(err, goredis.Nil) {
		v, err = 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redis: read %s: %w", keys.PolicyVersion, err)
	}
	return max(v, p.Version), nil
}

// ReadPolicy returns the pointer AnnouncePolicy stored at keys.Policy; found
// is false (and err nil) when nothing was announced. A value that does not
// decode, or has no version or dir, is an error naming the key.
func ReadPolicy(ctx context.Context, client goredis.UniversalClient, keys Keys) (p PolicyPointer, found bool, err error) {
	return readPolicy(ctx, client, keys)
}

func readPolicy(ctx context.Context, client goredis.Cmdable, keys Keys) (PolicyPointer, bool, error) {
	if keys.Policy == "" {
		return PolicyPointer{}, false, fmt.Errorf("redis: read policy: keys have no Policy key (use JobKeys)")
	}
	data, err := client.Get(ctx, keys.Policy).Bytes()
	if errors.Is(err, goredis.Nil) {
		return PolicyPointer{}, false, nil
	}
	if err != nil {
		return PolicyPointer{}, false, fmt.Errorf("redis: read %s: %w", keys.Policy, err)
	}
	var p PolicyPointer
	if err := json.Unmarshal(data, &p); err != nil {
		return PolicyPointer{}, false, fmt.Errorf("redis: %s holds %q, not a policy pointer: %w", keys.Policy, data, err)
	}
	if p.Version < 1 || p.Dir == "" {
		return PolicyPointer{}, false, fmt.Errorf("redis: %s holds %q: want a version >= 1 and a dir", keys.Policy, data)
	}
	return p, true, nil
}
