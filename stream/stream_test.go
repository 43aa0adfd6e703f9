package stream

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

func connect(t *testing.T, url string) goredis.UniversalClient {
	t.Helper()
	c, err := Connect(context.Background(), url, ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// testGroup is prompt's group of g in job: a call whose text needs JSON
// escaping, its result, an answer; a logprob in exponent notation; reward
// i/3 and step rewards 0.1 and i for sample i.
func testGroup(job, prompt string, g int) *traj.Group {
	return iterationGroup(job, prompt, g, 0)
}

// iterationGroup is testGroup sampled in iteration k of the closed loop.
func iterationGroup(job, prompt string, g, k int) *traj.Group {
	return trajtest.Group(trajtest.Options{Job: job, Prompt: prompt, Iteration: k, Size: g, PolicyVersion: 3, Temperature: trajtest.Temperature(0.7), Model: "m",
		Steps: []trajtest.Step{{Model: 1, Tool: 1, Reward: 0.1, Text: "<call> & \"q\"", Result: &traj.ToolResult{OK: true, Content: "<r>"}}, {Model: 1}},
		Sample: func(i int, t *traj.Trajectory) {
			t.Logprobs[0], t.Logprobs[2] = -0.5, -1.25e-7
			t.Reward = traj.Reward{Total: float64(i) / 3, Parts: map[string]float64{"outcome": 1}}
			t.StepRewards[1] = float64(i)
		}})
}

func TestAddGroupIsIdempotent(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	p := NewProducer(client, ProducerOptions{})
	g := testGroup("j", "p1", 2)
	for i, want := range []bool{true, false, false} {
		written, err := p.AddGroup(ctx, "j", g)
		if err != nil || written != want {
			t.Fatalf("AddGroup #%d = %v, %v; want %v", i, written, err, want)
		}
	}
	keys := JobKeys("j")
	msgs, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("groups stream holds %d entries (%v), want 1", len(msgs), err)
	}
	back, err := DecodeGroupEntry(Message{ID: msgs[0].ID, Values: msgs[0].Values})
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("entry does not decode to the group: %v", err)
	}
	if msgs[0].Values[FieldPolicyVersion] != "3" || msgs[0].Values[FieldSchema] != traj.TrajectorySchema {
		t.Errorf("entry fields %v", msgs[0].Values)
	}
	// The entry's schema field is the group's: v1 for old data.
	old := testGroup("j", "p2", 1)
	old.Schema = traj.TrajectorySchemaV1
	old.Trajectories[0].Schema, old.Trajectories[0].Temperature = traj.TrajectorySchemaV1, nil
	if _, err := p.AddGroup(ctx, "j", old); err != nil {
		t.Fatal(err)
	}
	msgs, _ = client.XRange(ctx, keys.Groups, "-", "+").Result()
	if len(msgs) != 2 || msgs[1].Values[FieldSchema] != traj.TrajectorySchemaV1 {
		t.Errorf("v1 group entry: %v", msgs)
	}
}

// TestAddGroupKeysByVersionedGroupID: one prompt's groups of iterations 0, 1
// and 2 are three groups for the producer's written set (job/p, job/p@1,
// job/p@2), each added once; iteration 1 again is refused.
func TestAddGroupKeysByVersionedGroupID(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	p := NewProducer(client, ProducerOptions{})
	for _, c := range []struct {
		iteration int
		want      bool
	}{{0, true}, {1, true}, {2, true}, {1, false}, {0, false}} {
		written, err := p.AddGroup(ctx, "j", iterationGroup("j", "p", 2, c.iteration))
		if err != nil || written != c.want {
			t.Fatalf("AddGroup of iteration %d = %v, %v; want %v", c.iteration, written, err, c.want)
		}
	}
	keys := JobKeys("j")
	members, err := client.SMembers(ctx, keys.GroupsWritten).Result()
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(members)
	if want := []string{"j/p", "j/p@1", "j/p@2"}; !slices.Equal(members, want) {
		t.Errorf("written set %v, want %v", members, want)
	}
	msgs, err := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if err != nil || len(msgs) != 3 {
		t.Fatalf("groups stream holds %d entries (%v), want 3", len(msgs), err)
	}
	for k, m := range msgs {
		back, err := DecodeGroupEntry(Message{ID: m.ID, Values: m.Values})
		if err != nil || !reflect.DeepEqual(back, iterationGroup("j", "p", 2, k)) {
			t.Fatalf("entry %d does not decode to iteration %d's group: %v", k, k, err)
		}
	}
}

func TestProducerBackpressure(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	const stream = "s"
	cons, err := NewConsumer(client, ConsumerOptions{Stream: stream, Group: "g", Consumer: "c", Count: 2, Block: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := cons.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	failing := NewProducer(client, ProducerOptions{MaxBacklog: 4, Fail: true, Groups: []string{"g"}})
	for i := 0; i < 4; i++ {
		if _, err := failing.Add(ctx, stream, Field{"n", []byte(fmt.Sprint(i))}); err != nil {
			t.Fatalf("add %d: %v", i, err)
		}
	}
	if _, err := failing.Add(ctx, stream, Field{"n", []byte("4")}); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("fifth add: %v, want ErrBackpressure", err)
	}
	// Delivered but unacknowledged entries still count.
	msgs, err := cons.Read(ctx)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("read: %d, %v", len(msgs), err)
	}
	if _, err := failing.Add(ctx, stream, Field{"n", []byte("4")}); !errors.Is(err, ErrBackpressure) {
		t.Fatalf("add with 2 pending + 2 undelivered: %v, want ErrBackpressure", err)
	}

	// A blocking producer waits until the consumer acknowledges.
	blocking := NewProducer(client, ProducerOptions{MaxBacklog: 4, Poll: time.Millisecond})
	done := make(chan error, 1)
	go func() {
		_, err := blocking.Add(ctx, stream, Field{"n", []byte("4")})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("blocking add returned before any ack: %v", err)
	default:
	}
	if err := cons.Ack(ctx, msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("blocking add: %v", err)
	}
	if n, _ := client.XLen(ctx, stream).Result(); n != 5 {
		t.Errorf("stream length %d, want 5 (nothing trimmed)", n)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := blocking.Add(cctx, stream, Field{"n", []byte("5")}); !errors.Is(err, context.Canceled) {
		t.Errorf("add at the limit with a cancelled context: %v", err)
	}
}

func TestConsumerClaimsDeadLettersAndCommits(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	exerciseConsumer(t, client, "j")
}

func TestConsumerOnCluster(t *testing.T) {
	c := testsupport.StartCluster(t)
	client := connect(t, "redis://"+c.Addrs[0]+","+c.Addrs[1]+","+c.Addrs[2])
	if _, ok := client.(*goredis.ClusterClient); !ok {
		t.Fatalf("client is %T, want a cluster client", client)
	}
	exerciseConsumer(t, client, "cj")
	ctx := context.Background()
	p := NewProducer(client, ProducerOptions{})
	if w, err := p.AddGroup(ctx, "cj", testGroup("cj", "p", 2)); err != nil || !w {
		t.Fatalf("AddGroup on the cluster: %v %v", w, err)
	}
}

// exerciseConsumer: three entries; consumer a reads them and dies; b claims
// them after the idle time (delivery 2), commits one twice (written once),
// dead-letters one and leaves one; c then finds the last one over its
// delivery limit and dead-letters it.
func exerciseConsumer(t *testing.T, client goredis.UniversalClient, job string) {
	ctx := context.Background()
	keys := JobKeys(job)
	opts := func(name string) ConsumerOptions {
		return ConsumerOptions{Stream: keys.Groups, Group: AdvantageGroup, Consumer: name, DeadLetter: keys.Dead,
			Block: 10 * time.Millisecond, ClaimIdle: 5 * time.Millisecond, MaxDeliveries: 2}
	}
	a, _ := NewConsumer(client, opts("a"))
	if err := a.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.EnsureGroup(ctx); err != nil {
		t.Fatalf("second EnsureGroup: %v", err)
	}
	for i := 0; i < 3; i++ {
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Groups, Values: []any{"n", i}}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.Read(ctx)
	if err != nil || len(got) != 3 || got[0].Deliveries != 1 {
		t.Fatalf("a read %d entries, %v", len(got), err)
	}

	b, _ := NewConsumer(client, opts("b"))
	claimed := readUntil(t, b, 3)
	for _, m := range claimed {
		if m.Deliveries != 2 {
			t.Errorf("claimed %s with %d deliveries, want 2", m.ID, m.Deliveries)
		}
	}
	out := []Output{{ID: claimed[0].ID, Done: "g0", Entries: [][]Field{{{"x", []byte("1")}}, {{"x", []byte("2")}}}}}
	for i, want := range []bool{true, false} {
		written, err := b.Commit(ctx, keys.GroupsDone, keys.Advantages, out)
		if err != nil || len(written) != 1 || written[0] != want {
			t.Fatalf("commit #%d = %v, %v; want %v", i, written, err, want)
		}
	}
	if n, _ := client.XLen(ctx, keys.Advantages).Result(); n != 2 {
		t.Errorf("advantages stream has %d entries, want 2 (one commit)", n)
	}
	if err := b.DeadLetter(ctx, DeadLetter{Message: claimed[1], Reason: "cannot decode"}); err != nil {
		t.Fatal(err)
	}

	c, _ := NewConsumer(client, opts("c"))
	deadline := time.Now().Add(10 * time.Second)
	for {
		if n, _ := client.XLen(ctx, keys.Dead).Result(); n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the over-delivered entry never reached the dead letters")
		}
		msgs, err := c.Read(ctx)
		if err != nil || len(msgs) != 0 {
			t.Fatalf("c read %d entries (%v), want the poison entry dead-lettered", len(msgs), err)
		}
	}
	dead, _ := client.XRange(ctx, keys.Dead, "-", "+").Result()
	if dead[0].Values[FieldReason] != "cannot decode" || dead[0].Values[FieldSourceID] != claimed[1].ID || dead[0].Values["field:n"] != "1" {
		t.Errorf("dead letter 0: %v", dead[0].Values)
	}
	if dead[1].Values[FieldSourceID] != claimed[2].ID || dead[1].Values[FieldDeliveries] != "3" {
		t.Errorf("dead letter 1: %v", dead[1].Values)
	}
	if p, err := c.Pending(ctx); err != nil || p != 0 {
		t.Errorf("pending %d (%v), want 0", p, err)
	}
}

// readUntil reads until n entries came back in one batch; the claim idle time
// is a few milliseconds, so the loop ends soon.
func readUntil(t *testing.T, c *Consumer, n int) []Message {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		msgs, err := c.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == n {
			return msgs
		}
		if len(msgs) != 0 {
			t.Fatalf("read %d entries, want %d", len(msgs), n)
		}
	}
	t.Fatalf("no batch of %d entries within 10 s", n)
	return nil
}

// A group committed through Consumer.Commit with GroupFields into the groups
// stream (the distributed-actor path) is the same entry AddGroup writes, and
// AddGroup then sees it as already written.
func TestGroupFieldsCommitMatchesAddGroup(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	keys := JobKeys("j")
	prompts, _ := NewConsumer(client, ConsumerOptions{Stream: keys.Prompts, Group: ActorsGroup, Consumer: "a", Block: 10 * time.Millisecond})
	if err := prompts.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: keys.Prompts, Values: []any{"prompt_id", "p1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	msgs, err := prompts.Read(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("read prompts: %d %v", len(msgs), err)
	}
	g := testGroup("j", "p1", 2)
	data, _ := wire.EncodeGroup(g)
	payload := GroupPayload{GroupID: g.GroupID, PolicyVersion: g.PolicyVersion, JSON: data}
	written, err := prompts.Commit(ctx, keys.GroupsWritten, keys.Groups, []Output{{ID: msgs[0].ID, Done: g.GroupID, Entries: [][]Field{GroupFields(payload)}}})
	if err != nil || !written[0] {
		t.Fatalf("commit: %v %v", written, err)
	}
	if w, err := NewProducer(client, ProducerOptions{}).AddGroup(ctx, "j", g); err != nil || w {
		t.Fatalf("AddGroup after the commit wrote again: %v %v", w, err)
	}
	entries, _ := client.XRange(ctx, keys.Groups, "-", "+").Result()
	if len(entries) != 1 {
		t.Fatalf("%d group entries", len(entries))
	}
	back, err := DecodeGroupEntry(Message{ID: entries[0].ID, Values: entries[0].Values})
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("decode: %v", err)
	}
}

func TestPruneIdleConsumers(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	opts := func(name string) ConsumerOptions {
		return ConsumerOptions{Stream: "s", Group: "g", Consumer: name, Count: 1, Block: 5 * time.Millisecond}
	}
	holder, _ := NewConsumer(client, opts("holder"))
	if err := holder.EnsureGroup(ctx); err != nil {
		t.Fatal(err)
	}
	// Redis creates a consumer when it first gets an entry: each reads one;
	// the two that will be pruned acknowledge theirs, the holder keeps it.
	for _, name := range []string{"gone-1", "gone-2", "holder"} {
		if err := client.XAdd(ctx, &goredis.XAddArgs{Stream: "s", Values: []any{"n", name}}).Err(); err != nil {
			t.Fatal(err)
		}
		c, _ := NewConsumer(client, opts(name))
		msgs, err := c.Read(ctx)
		if err != nil || len(msgs) != 1 {
			t.Fatalf("%s read %d, %v", name, len(msgs), err)
		}
		if name != "holder" {
			if err := c.Ack(ctx, msgs[0].ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(20 * time.Millisecond) // the consumers must be idle for the threshold
	n, err := holder.PruneIdleConsumers(ctx, 10*time.Millisecond)
	if err != nil || n != 2 {
		t.Fatalf("pruned %d (%v), want the two without pending entries", n, err)
	}
	left, _ := client.XInfoConsumers(ctx, "s", "g").Result()
	if len(left) != 1 || left[0].Name != "holder" || left[0].Pending != 1 {
		t.Fatalf("consumers left: %+v", left)
	}
}

// With GroupFormat binary the producer writes the binary group format with
// the format field; DecodeGroupEntry reads it back to the group, and refuses
// an entry whose format field and payload disagree, naming the field. A
// JSON producer's entries carry no format field (what every reader takes).
func TestAddGroupBinaryFormat(t *testing.T) {
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := connect(t, r.URL())
	ctx := context.Background()
	g := testGroup("j", "p1", 3)
	if w, err := NewProducer(client, ProducerOptions{GroupFormat: GroupFormatBinaryName}).AddGroup(ctx, "j", g); err != nil || !w {
		t.Fatalf("AddGroup: %v %v", w, err)
	}
	if _, err := NewProducer(client, ProducerOptions{}).AddGroup(ctx, "j", testGroup("j", "p2", 2)); err != nil {
		t.Fatal(err)
	}
	msgs, err := client.XRange(ctx, JobKeys("j").Groups, "-", "+").Result()
	if err != nil || len(msgs) != 2 {
		t.Fatalf("groups stream holds %d entries (%v), want 2", len(msgs), err)
	}
	bin := Message{ID: msgs[0].ID, Values: msgs[0].Values}
	if bin.Values[FieldFormat] != GroupFormatBinary || !wire.IsGroupBinary([]byte(bin.Values[FieldGroup].(string))) {
		t.Fatalf("binary entry: format %v, payload opens %q", bin.Values[FieldFormat], bin.Values[FieldGroup].(string)[:4])
	}
	if _, ok := msgs[1].Values[FieldFormat]; ok {
		t.Errorf("a JSON entry has a format field: %v", msgs[1].Values)
	}
	back, err := DecodeGroupEntry(bin)
	if err != nil || !reflect.DeepEqual(back, g) {
		t.Fatalf("binary entry does not decode to the group: %v", err)
	}
	jsonPayload := msgs[1].Values[FieldGroup]
	for _, c := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"binary payload without the field", map[string]any{FieldGroupID: g.GroupID, FieldGroup: bin.Values[FieldGroup]}, "field format is absent (JSON) but the group field is in the binary group format"},
		{"JSON payload marked binary", map[string]any{FieldGroupID: "j/p2", FieldGroup: jsonPayload, FieldFormat: GroupFormatBinary}, `field format is "toolrl.group.bin/v1" but the group field does not open with "TRLG"`},
		{"unknown format", map[string]any{FieldGroupID: "j/p2", FieldGroup: jsonPayload, FieldFormat: "msgpack"}, `field format is "msgpack"`},
	} {
		if _, err := DecodeGroupEntry(Message{ID: "9-0", Values: c.values}); err == nil || !strings.Contains(err.Error(), "entry 9-0: "+c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if err := ValidGroupFormat("msgpack"); err == nil || !strings.Contains(err.Error(), "msgpack") {
		t.Errorf("ValidGroupFormat(msgpack) = %v", err)
	}
}
