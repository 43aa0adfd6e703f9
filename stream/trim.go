package stream

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	goredis "github.com/redis/go-redis/v9"
)

// TrimConsumed deletes the entries of stream that every consumer group has
// delivered and acknowledged (XTRIM MINID), and returns how many it deleted.
// The boundary is, over the groups, the oldest entry still pending, or else
// the last delivered entry (which is kept: XTRIM MINID removes only older
// ids). A stream without consumer groups is left alone: nobody has consumed
// it. Readers outside consumer groups (XRANGE) no longer see trimmed
// entries, so trimming is the caller's choice, never a default.
func TrimConsumed(ctx context.Context, client goredis.UniversalClient, stream string) (int64, error) {
	infos, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("redis: xinfo groups %s: %w", stream, err)
	}
	if len(infos) == 0 {
		return 0, nil
	}
	var bound string
	for _, info := range infos {
		keep := info.LastDeliveredID
		if info.Pending > 0 {
			p, err := client.XPending(ctx, stream, info.Name).Result()
			if err != nil {
				return 0, fmt.Errorf("redis: xpending %s group %s: %w", stream, info.Name, err)
			}
			if p.Count > 0 {
				keep = p.Lower
			}
		}
		if bound == "" || idLess(keep, bound) {
			bound = keep
		}
	}
	if bound == "" || bound == "0-0" {
		return 0, nil
	}
	n, err := client.XTrimMinID(ctx, stream, bound).Result()
	if err != nil {
		return 0, fmt.Errorf("redis: xtrim %s minid %s: %w", stream, bound, err)
	}
	return n, nil
}

// idLess orders stream ids ("ms-seq") numerically; an id that does not parse
// sorts first, so that it can only make a trim keep more.
func idLess(a, b string) bool {
	am, as, aok := parseID(a)
	bm, bs, bok := parseID(b)
	switch {
	case !aok:
		return true
	case !bok:
		return false
	case am != bm:
		return am < bm
	}
	return as < bs
}

func parseID(id string) (ms, seq uint64, ok bool) {
	m, s, found := strings.Cut(id, "-")
	var err1, err2 error
	ms, err1 = strconv.ParseUint(m, 10, 64)
	if found {
		seq, err2 = strconv.ParseUint(s, 10, 64)
	}
	return ms, seq, err1 == nil && err2 == nil
}
