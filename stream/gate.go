package stream

import (
	"context"
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"
)

// The exactly-once writes (Producer.AddGroupPayloads, Consumer.Commit) are
// optimistic MULTI/EXEC transactions rather than Lua scripts. Recent Redis
// builds (7.0.15 here) hash every byte of every string that enters Lua (ARGV
// included), and the payloads here are tens of KB each: a script spent more
// server CPU hashing and copying them than the XADDs themselves. A
// transaction hands the big arguments to XADD as they arrived.
//
// The gate, per batch of members (group ids) of a set:
//
//  1. WATCH one lock key per member (set + ":lock:" + member);
//  2. SMISMEMBER set members: which are already done;
//  3. MULTI; SADD set <fresh members>; MSET and DEL the lock keys; the writes
//     of the fresh members; the acknowledgements; EXEC.
//
// Two writers racing on one member both WATCH its lock key; the first EXEC
// touches it (MSET), so the second EXEC aborts, and the second writer's retry
// finds the member in the set. A writer that WATCHes after the first EXEC
// finds it in the set at once. The lock keys never outlive the transaction
// (MSET then DEL): they exist only to be modified. Writers of different
// members never abort each other. Redis runs EXEC atomically and writes it to
// the AOF as one MULTI/EXEC block (a block cut short is dropped on load), so
// either every effect of a batch happened or none did.

// gateRetries bounds how often a batch is retried after an abort (another
// writer committed one of its members meanwhile; each retry finds more of
// them done).
const gateRetries = 16

// gateLockKey is the key a gated transaction WATCHes for member of set. It
// shares set's hash slot when set has a hash tag (JobKeys' keys do).
func gateLockKey(set, member string) string { return set + ":lock:" + member }

// gatedTx adds the members not yet in set to it and, atomically with that,
// runs queue, which adds the writes of the fresh members (fresh[i] reports
// member i) and anything that must happen for every member (acknowledgements)
// to the transaction. A member repeated within members is fresh at most once.
// It returns fresh.
func gatedTx(ctx context.Context, client goredis.UniversalClient, set string, members []string,
	queue func(pipe goredis.Pipeliner, fresh []bool)) ([]bool, error) {
	locks := make([]string, len(members))
	args := make([]any, len(members))
	for i, m := range members {
		locks[i] = gateLockKey(set, m)
		args[i] = m
	}
	fresh := make([]bool, len(members))
	for attempt := 0; ; attempt++ {
		err := client.Watch(ctx, func(tx *goredis.Tx) error {
			done, err := tx.SMIsMember(ctx, set, args...).Result()
			if err != nil {
				return fmt.Errorf("smismember %s: %w", set, err)
			}
			var add []any
			seen := make(map[string]bool, len(members))
			for i, m := range members {
				fresh[i] = !done[i] && !seen[m]
				seen[m] = true
				if fresh[i] {
					add = append(add, m)
				}
			}
			_, err = tx.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
				if len(add) > 0 {
					pipe.SAdd(ctx, set, add...)
				}
				pipe.MSet(ctx, lockValues(locks)...)
				pipe.Del(ctx, locks...)
				queue(pipe, fresh)
				return nil
			})
			return err
		}, locks...)
		if err == nil {
			return fresh, nil
		}
		if !errors.Is(err, goredis.TxFailedErr) || attempt >= gateRetries || ctx.Err() != nil {
			return nil, err
		}
	}
}

// lockValues are the MSET arguments that set each lock key to "1".
func lockValues(locks []string) []any {
	kv := make([]any, 0, 2*len(locks))
	for _, l := range locks {
		kv = append(kv, l, "1")
	}
	return kv
}
