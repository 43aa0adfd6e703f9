package learner

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/model/llama"
	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// errCrash stands for a process dying at a test hook.
var errCrash = errors.New("simulated crash")

// writeTinyBase writes the "tiny" Llama shape (vocabulary 320) with random
// weights and safetensors as a model folder, version 0 of the tests below.
func writeTinyBase(t *testing.T) string {
	t.Helper()
	cfg, err := llama.ShapeConfig("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := llama.RandomWeights(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "base")
	if _, err := llama.WriteFolder(dir, llama.FolderSpec{Config: cfg, Weights: w, Safetensors: true}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// freshLearner loads the base folder as a new process would: a learner at
// version 0 that keeps every record (no staleness bound) and the base files.
func freshLearner(t *testing.T, dir string) (*Learner, Base) {
	t.Helper()
	m, cfg, err := LoadModel(dir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := ReadBase(dir, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions()
	opts.LR, opts.MaxStaleness = 1e-3, -1
	l, err := New(m, nil, 0, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, base
}

// addRecordEntry appends one advantages-stream entry with the fields the
// advantage service writes (stream.RecordFields) and returns its id.
func addRecordEntry(t *testing.T, client goredis.UniversalClient, keys stream.Keys, fields []stream.Field) string {
	t.Helper()
	values := make([]any, 0, 2*len(fields))
	for _, f := range fields {
		values = append(values, f.Name, f.Value)
	}
	id, err := client.XAdd(context.Background(), &goredis.XAddArgs{Stream: keys.Advantages, Values: values}).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func addRecords(t *testing.T, client goredis.UniversalClient, keys stream.Keys, recs []traj.AdvantageRecord) []string {
	t.Helper()
	ids := make([]string, len(recs))
	for i := range recs {
		data, err := wire.EncodeRecord(&recs[i])
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = addRecordEntry(t, client, keys, stream.RecordFields(&recs[i], data))
	}
	return ids
}

// groupDrained reports whether the learner group has read every entry and
// acknowledged all it read.
func groupDrained(ctx context.Context, client goredis.UniversalClient, keys stream.Keys) (bool, error) {
	p, err := client.XPending(ctx, keys.Advantages, stream.LearnerGroup).Result()
	if err != nil {
		return false, err
	}
	infos, err := client.XInfoGroups(ctx, keys.Advantages).Result()
	if err != nil {
		return false, err
	}
	for _, g := range infos {
		if g.Name == stream.LearnerGroup {
			return p.Count == 0 && g.Lag == 0, nil
		}
	}
	return false, fmt.Errorf("no group %s on %s", stream.LearnerGroup, keys.Advantages)
}

// redisRun is one learner process: a fresh learner from the base folder, the
// store opened and resumed from, a stream source under consumer, Run with
// the hooks; the store is closed at the end, as at a process exit.
type redisRun struct {
	base, store, consumer string
	client                goredis.UniversalClient
	keys                  stream.Keys
	// hooks set on RunOptions
	beforePublish, afterPublish func() error
	onPublish                   func(policystore.Version, State)
	// drain cancels the run once the group is drained; else Run's own end.
	drain bool
	// publishEvery (default 1), claimIdle (default the source's) and
	// onUpdate tune the run.
	publishEvery int
	claimIdle    time.Duration
	onUpdate     func(Metrics)
	maxUpdates   int
}

func (r redisRun) run(t *testing.T) (Summary, *StreamSource, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, base := freshLearner(t, r.base)
	store, err := policystore.Open(r.store)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	src, err := NewStreamSource(ctx, r.client, StreamOptions{Job: r.keys.Job, Consumer: r.consumer, Size: 8, MaxWait: 50 * time.Millisecond, ClaimIdle: r.claimIdle})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ResumeFrom(ctx, l, store, src); err != nil {
		t.Fatal(err)
	}
	o := RunOptions{Store: store, Base: base, PublishEvery: max(r.publishEvery, 1), MaxUpdates: r.maxUpdates, SetAside: true, OnUpdate: r.onUpdate,
		Announce: func(ctx context.Context, v policystore.Version) error {
			return stream.AnnouncePolicy(ctx, r.client, r.keys, stream.PolicyPointer{Version: v.Number, Dir: v.Dir, PublishedAt: v.Manifest.Created})
		},
		OnPublish: r.onPublish, beforePublish: r.beforePublish, afterPublish: r.afterPublish}
	if !r.drain {
		sum, err := Run(ctx, l, src, o)
		return sum, src, err
	}
	type result struct {
		sum Summary
		err error
	}
	done := make(chan result, 1)
	go func() {
		sum, err := Run(ctx, l, src, o)
		done <- result{sum, err}
	}()
	deadline := time.After(15 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case res := <-done:
			return res.sum, src, fmt.Errorf("run ended before the stream was drained: %v", res.err)
		case <-deadline:
			cancel()
			res := <-done
			return res.sum, src, fmt.Errorf("stream not drained within 15 s (run: %v)", res.err)
		case <-tick.C:
		}
		drained, err := groupDrained(ctx, r.client, r.keys)
		if err != nil {
			cancel()
			<-done
			return Summary{}, src, err
		}
		if drained {
			cancel()
			res := <-done
			return res.sum, src, res.err
		}
	}
}

// checkPointer asserts that the Redis policy pointer and policy_version name
// version v.
func checkPointer(t *testing.T, client goredis.UniversalClient, keys stream.Keys, v policystore.Version) {
	t.Helper()
	ctx := context.Background()
	p, found, err := stream.ReadPolicy(ctx, client, keys)
	if err != nil || !found || p.Version != v.Number || p.Dir != v.Dir {
		t.Errorf("policy pointer %+v found=%v err=%v, want version %d at %s", p, found, err, v.Number, v.Dir)
	}
	n, err := client.Get(ctx, keys.PolicyVersion).Int64()
	if err != nil || n != v.Number {
		t.Errorf("%s = %d (%v), want %d", keys.PolicyVersion, n, err, v.Number)
	}
}

// storeVersions reads every version 1..latest of the store at dir, checking
// they are consecutive (each one's parent the one before), and that latest
// verifies and loads.
func storeVersions(t *testing.T, dir string) []policystore.Version {
	t.Helper()
	store, err := policystore.OpenReadOnly(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	latest, err := store.Latest()
	if err != nil {
		t.Fatal(err)
	}
	if err := policystore.Verify(context.Background(), latest); err != nil {
		t.Errorf("latest version %d does not verify: %v", latest.Number, err)
	}
	if _, _, err := LoadModel(latest.Dir); err != nil {
		t.Errorf("latest version %d does not load: %v", latest.Number, err)
	}
	var out []policystore.Version
	for n := int64(1); n <= latest.Number; n++ {
		v, err := store.Get(n)
		if err != nil {
			t.Fatalf("version %d of %d: %v", n, latest.Number, err)
		}
		if v.Manifest.Parent != n-1 {
			t.Errorf("version %d has parent %d, want %d", n, v.Manifest.Parent, n-1)
		}
		out = append(out, v)
	}
	return out
}

// TestRedisMaxUpdatesStopsAfterOneBatch: with MaxUpdates 1 the run ends on
// its own after one update of one batch (the source's first 8 entries),
// publishes it as version 1 with exactly those entries consumed and
// acknowledged, and leaves the rest of the stream unread.
func TestRedisMaxUpdatesStopsAfterOneBatch(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	keys := stream.JobKeys("learn-max")
	baseDir := writeTinyBase(t)
	m, _, err := LoadModel(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	ids := addRecords(t, client, keys, onPolicyRecords(t, m, 20, 1, func(i int) float32 { return float32(i%3) - 1 }))
	storeDir := filepath.Join(t.TempDir(), "store")
	var updates []Metrics
	r := redisRun{base: baseDir, store: storeDir, consumer: "learner-a", client: client, keys: keys, maxUpdates: 1,
		onUpdate: func(m Metrics) { updates = append(updates, m) }}
	sum, _, err := r.run(t)
	if err != nil || sum.Updates != 1 || sum.Published != 1 || sum.Records != 8 || len(updates) != 1 || updates[0].Steps != 1 {
		t.Fatalf("run: %+v, %d updates, err %v; want one update of 8 records, one step, published", sum, len(updates), err)
	}
	versions := storeVersions(t, storeDir)
	st, err := ReadState(versions[len(versions)-1])
	if err != nil {
		t.Fatal(err)
	}
	if len(versions) != 1 || !slices.Equal(st.Consumed, ids[:8]) {
		t.Errorf("versions %d, version 1 consumed %v; want one version of %v", len(versions), st.Consumed, ids[:8])
	}
	ctx := context.Background()
	p, err := client.XPending(ctx, keys.Advantages, stream.LearnerGroup).Result()
	if err != nil || p.Count != 0 {
		t.Errorf("%d pending (%v), want 0", p.Count, err)
	}
	infos, err := client.XInfoGroups(ctx, keys.Advantages).Result()
	if err != nil || len(infos) != 1 || infos[0].Lag != 12 {
		t.Errorf("groups %+v (%v): want the learner group with 12 entries unread", infos, err)
	}
}

// TestRedisExactlyOnceAcrossRestarts: run 1 dies after its 2nd publish and
// before acknowledging it, run 2 dies after an update and before its
// publish, run 3 drains the stream. Every entry is in exactly one published
// version's Consumed, nothing is left pending, the versions are consecutive
// and the latest verifies and loads; the Redis pointer follows each publish.
func TestRedisExactlyOnceAcrossRestarts(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	keys := stream.JobKeys("learn-once")
	baseDir := writeTinyBase(t)
	m, _, err := LoadModel(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	recs := onPolicyRecords(t, m, 40, 1, func(i int) float32 { return float32(i%3) - 1 })
	ids := addRecords(t, client, keys, recs)

	storeDir := filepath.Join(t.TempDir(), "store")
	var published []int64
	onPublish := func(v policystore.Version, st State) {
		published = append(published, v.Number)
		checkPointer(t, client, keys, v) // announced before OnPublish
	}
	r := redisRun{base: baseDir, store: storeDir, consumer: "learner-a", client: client, keys: keys, onPublish: onPublish}

	// Run 1: crash after publishing (and announcing) version 2, before its
	// acknowledgement.
	publishes := 0
	r1 := r
	r1.afterPublish = func() error {
		publishes++
		if publishes == 2 {
			return errCrash
		}
		return nil
	}
	sum, _, err := r1.run(t)
	if !errors.Is(err, errCrash) || sum.Published != 1 {
		t.Fatalf("run 1: published %d, err %v; want 1 and the crash", sum.Published, err)
	}
	if p, err := client.XPending(context.Background(), keys.Advantages, stream.LearnerGroup).Result(); err != nil || p.Count != 8 {
		t.Fatalf("after run 1: %d pending (%v), want version 2's 8", p.Count, err)
	}
	pointer, _, _ := stream.ReadPolicy(context.Background(), client, keys)
	if pointer.Version != 2 {
		t.Errorf("after run 1: pointer at version %d, want 2 (announced before the crash)", pointer.Version)
	}

	// Run 2: resumes from version 2, trains one batch, crashes before
	// publishing it.
	r2 := r
	updates := 0
	r2.beforePublish = func() error {
		updates++
		return errCrash
	}
	sum, _, err = r2.run(t)
	if !errors.Is(err, errCrash) || sum.Published != 0 || sum.Updates != 1 || sum.FirstVersion != 2 || updates != 1 {
		t.Fatalf("run 2: %+v, err %v; want one update from version 2, nothing published, and the crash", sum, err)
	}

	// Run 3: resumes from version 2 and drains the stream.
	r3 := r
	r3.drain = true
	sum, _, err = r3.run(t)
	if err != nil {
		t.Fatalf("run 3: %v", err)
	}
	if sum.FirstVersion != 2 || sum.Records != 24 || sum.Trained != 24 {
		t.Errorf("run 3: %+v; want 24 records (run 2's unpublished batch again, then the rest) from version 2", sum)
	}
	if want := []int64{1, 3, 4, 5}; !slices.Equal(published, want) {
		t.Errorf("OnPublish saw versions %v, want %v", published, want)
	}

	versions := storeVersions(t, storeDir)
	seen := map[string]int64{}
	var records int
	for _, v := range versions {
		st, err := ReadState(v)
		if err != nil {
			t.Fatal(err)
		}
		if st.Version != v.Number || len(st.Consumed) != st.Records {
			t.Errorf("version %d: state %+v", v.Number, st)
		}
		records += st.Records
		for _, id := range st.Consumed {
			if prev, ok := seen[id]; ok {
				t.Errorf("entry %s consumed by version %d and again by version %d", id, prev, v.Number)
			}
			seen[id] = v.Number
		}
	}
	for _, id := range ids {
		if _, ok := seen[id]; !ok {
			t.Errorf("entry %s is in no version's consumed list", id)
		}
	}
	if len(seen) != len(ids) || records != len(ids) {
		t.Errorf("versions consumed %d distinct entries (%d records), want the %d on the stream", len(seen), records, len(ids))
	}
	if len(versions) != 5 {
		t.Errorf("%d versions, want 5 (40 records in batches of 8)", len(versions))
	}
	if drained, err := groupDrained(context.Background(), client, keys); err != nil || !drained {
		t.Errorf("learner group drained %v (%v), want nothing pending", drained, err)
	}
	checkPointer(t, client, keys, versions[len(versions)-1])
}

// TestRedisDeadLettersBadRecords: an entry whose record does not decode and a
// record the model cannot train on (a token outside its vocabulary) go to
// the dead letters with the reason and the entry's fields, are acknowledged,
// and the rest of their batch is trained on and published.
func TestRedisDeadLettersBadRecords(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	ctx := context.Background()
	keys := stream.JobKeys("learn-dead")
	baseDir := writeTinyBase(t)
	m, _, err := LoadModel(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	recs := onPolicyRecords(t, m, 7, 1, func(int) float32 { return 1 })
	recs[3].InputIDs[1] = int32(m.Config.Vocab) // untrainable
	badVocab := recs[3]
	var ids []string
	ids = append(ids, addRecords(t, client, keys, recs[:5])...)
	badJSON := []stream.Field{
		{Name: stream.FieldTrajectoryID, Value: []byte("job/p/broken")}, {Name: stream.FieldGroupID, Value: []byte("job/p")},
		{Name: stream.FieldPolicyVersion, Value: []byte("0")}, {Name: stream.FieldSchema, Value: []byte(traj.AdvantageSchema)},
		{Name: stream.FieldRecord, Value: []byte(`{"schema":"` + traj.AdvantageSchema + `","trajectory_id":`)},
	}
	badJSONID := addRecordEntry(t, client, keys, badJSON)
	ids = append(ids, addRecords(t, client, keys, recs[5:])...)
	badVocabID := ids[3]
	good := append(append([]string(nil), ids[:3]...), ids[4:]...)

	storeDir := filepath.Join(t.TempDir(), "store")
	var published []int64
	r := redisRun{base: baseDir, store: storeDir, consumer: "learner-a", client: client, keys: keys, drain: true,
		onPublish: func(v policystore.Version, _ State) {
			published = append(published, v.Number)
			checkPointer(t, client, keys, v)
		}}
	sum, src, err := r.run(t)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Published != 1 || sum.Updates != 1 || sum.Trained != 6 || src.Rejected() != 2 || sum.Rejected != 2 {
		t.Errorf("summary %+v, source rejected %d; want one update of the 6 good records and 2 entries rejected", sum, src.Rejected())
	}
	versions := storeVersions(t, storeDir)
	if len(versions) != 1 || !slices.Equal(published, []int64{1}) {
		t.Fatalf("%d versions, published %v; want version 1 only", len(versions), published)
	}
	st, err := ReadState(versions[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(st.Consumed, good) || st.Records != len(good) {
		t.Errorf("version 1 consumed %v (%d records), want the good entries %v", st.Consumed, st.Records, good)
	}
	if drained, err := groupDrained(ctx, client, keys); err != nil || !drained {
		t.Errorf("learner group drained %v (%v), want nothing pending", drained, err)
	}

	dead, err := client.XRange(ctx, keys.Dead, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 2 {
		t.Fatalf("%d dead letters, want 2: %v", len(dead), dead)
	}
	byID := map[string]map[string]any{}
	for _, d := range dead {
		byID[fmt.Sprint(d.Values[stream.FieldSourceID])] = d.Values
	}
	vocabData, _ := wire.EncodeRecord(&badVocab)
	for _, c := range []struct {
		id     string
		fields []stream.Field
		reason []string // substrings of the reason
	}{
		{badJSONID, badJSON, []string{badJSONID}},
		{badVocabID, stream.RecordFields(&badVocab, vocabData), []string{badVocab.TrajectoryID, "vocabulary"}},
	} {
		d, ok := byID[c.id]
		if !ok {
			t.Errorf("entry %s is not in the dead letters", c.id)
			continue
		}
		reason := fmt.Sprint(d[stream.FieldReason])
		for _, s := range c.reason {
			if !strings.Contains(reason, s) {
				t.Errorf("dead letter of %s: reason %q does not name %q", c.id, reason, s)
			}
		}
		if d[stream.FieldSourceStream] != keys.Advantages || d[stream.FieldSourceGroup] != stream.LearnerGroup {
			t.Errorf("dead letter of %s: source %v group %v", c.id, d[stream.FieldSourceStream], d[stream.FieldSourceGroup])
		}
		for _, f := range c.fields {
			if got := d["field:"+f.Name]; got != string(f.Value) {
				t.Errorf("dead letter of %s: field:%s = %.80q, want %.80q", c.id, f.Name, got, f.Value)
			}
		}
	}
	if n, _ := client.XLen(ctx, keys.Advantages).Result(); n != int64(len(ids)+1) {
		t.Errorf("advantages stream holds %d entries, want %d (dead-lettering acknowledges, it does not delete)", n, len(ids)+1)
	}
}

// TestRedisOwnEntriesReclaimedWhileWaitingAreNotTrainedTwice: entries
// trained and waiting for their version (PublishEvery 2) sit idle in the
// learner's own pending list; XAUTOCLAIM hands them back after ClaimIdle,
// and they must not join a second batch.
func TestRedisOwnEntriesReclaimedWhileWaitingAreNotTrainedTwice(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	client := srv.Client(t)
	keys := stream.JobKeys("learn-reclaim")
	baseDir := writeTinyBase(t)
	m, _, err := LoadModel(baseDir)
	if err != nil {
		t.Fatal(err)
	}
	ids := addRecords(t, client, keys, onPolicyRecords(t, m, 16, 1, func(int) float32 { return 1 }))
	storeDir := filepath.Join(t.TempDir(), "store")
	r := redisRun{base: baseDir, store: storeDir, consumer: "learner-a", client: client, keys: keys, drain: true,
		publishEvery: 2, claimIdle: 20 * time.Millisecond,
		onUpdate: func(Metrics) { time.Sleep(60 * time.Millisecond) }}
	sum, _, err := r.run(t)
	if err != nil {
		t.Fatal(err)
	}
	var consumed []string
	for _, v := range storeVersions(t, storeDir) {
		st, err := ReadState(v)
		if err != nil {
			t.Fatal(err)
		}
		consumed = append(consumed, st.Consumed...)
	}
	slices.Sort(consumed)
	want := slices.Sorted(slices.Values(ids))
	if sum.Records != len(ids) || !slices.Equal(consumed, want) {
		t.Fatalf("read %d records for %d entries; versions consumed %d ids (%v), want each of the %d once", sum.Records, len(ids), len(consumed), consumed, len(ids))
	}
}
