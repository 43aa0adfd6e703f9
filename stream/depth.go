package stream

import (
	"context"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// GroupDepth is where one consumer group stands in a stream (XINFO GROUPS).
type GroupDepth struct {
	// Group is the consumer group's name.
	Group string
	// Pending counts the entries delivered to the group's consumers and not
	// yet acknowledged.
	Pending int64
	// Lag counts the entries not yet delivered to the group; -1 when Redis
	// cannot tell (entries deleted from the middle of the stream, or a
	// server before Redis 7).
	Lag int64
}

// Depth returns the length of stream (XLEN) and where each of its consumer
// groups stands, in the order Redis lists them. A stream that does not
// exist has length 0 and no groups.
func Depth(ctx context.Context, client goredis.UniversalClient, stream string) (length int64, groups []GroupDepth, err error) {
	length, err = client.XLen(ctx, stream).Result()
	if err != nil {
		return 0, nil, fmt.Errorf("redis: xlen %s: %w", stream, err)
	}
	infos, err := client.XInfoGroups(ctx, stream).Result()
	if err != nil {
		if isNoSuchKey(err) {
			return length, nil, nil
		}
		return 0, nil, fmt.Errorf("redis: xinfo groups %s: %w", stream, err)
	}
	groups = make([]GroupDepth, len(infos))
	for i, info := range infos {
		groups[i] = GroupDepth{Group: info.Name, Pending: info.Pending, Lag: info.Lag}
	}
	return length, groups, nil
}
