package stream

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
)

// Writers racing on the same members (overlapping batches, in different
// orders, with a member repeated inside a batch) write each member exactly
// once, and no lock key is left behind.
func TestGatedCommitRace(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	keys := JobKeys("race")
	const writers, members = 4, 40
	var wg sync.WaitGroup
	wins := make([]map[string]int, writers)
	errs := make([]error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, _ := NewConsumer(client, ConsumerOptions{Stream: keys.Groups, Group: AdvantageGroup, Consumer: fmt.Sprint("w", w)})
			wins[w] = map[string]int{}
			for start := 0; start < members; start += 5 {
				var out []Output
				for k := 0; k < 8; k++ {
					m := fmt.Sprint("g", (start+k*(w+1))%members)
					out = append(out, Output{ID: "0-1", Done: m, Entries: [][]Field{{{Name: "m", Value: []byte(m)}}}})
				}
				out = append(out, out[0]) // a repeat within the batch
				written, err := c.Commit(ctx, keys.GroupsDone, keys.Advantages, out)
				if err != nil {
					errs[w] = err
					return
				}
				for i, ok := range written {
					if ok {
						wins[w][out[i].Done]++
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	total := map[string]int{}
	for _, m := range wins {
		for k, v := range m {
			total[k] += v
		}
	}
	entries, err := client.XRange(ctx, keys.Advantages, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Values["m"].(string)]++
	}
	for m, n := range seen {
		if n != 1 || total[m] != 1 {
			t.Errorf("member %s: %d entries written, reported written %d times; want 1", m, n, total[m])
		}
	}
	if n, _ := client.SCard(ctx, keys.GroupsDone).Result(); int(n) != len(seen) {
		t.Errorf("done set holds %d members, %d were written", n, len(seen))
	}
	locks, err := client.Keys(ctx, gateLockKey(keys.GroupsDone, "*")).Result()
	if err != nil || len(locks) != 0 {
		t.Errorf("lock keys left: %v %v", locks, err)
	}
}
