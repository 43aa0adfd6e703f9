package sink

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/stream"
	"github.com/toolrl/toolrl/traj/wire"
)

// The Redis sink writes JSON groups by default and the binary group format
// with ?group_format=binary (entries then carry the format field); both
// decode to the group written. Another value is refused when the sink opens.
func TestRedisSinkGroupFormat(t *testing.T) {
	srv := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	for _, c := range []struct{ job, query, format string }{{"plain", "", ""}, {"bin", "?group_format=binary", stream.GroupFormatBinary}} {
		sink, err := openRedisSink(ctx, srv.URL()+c.query, c.job)
		if err != nil {
			t.Fatal(err)
		}
		g := trajtest.Group(trajtest.Options{Job: c.job, Size: 2, Temperature: trajtest.Temperature(0.7)})
		if w, err := sink.WriteGroup(ctx, g); err != nil || !w {
			t.Fatalf("%s: write: %v %v", c.job, w, err)
		}
		entries, err := sink.client.XRange(ctx, stream.JobKeys(c.job).Groups, "-", "+").Result()
		if err != nil || len(entries) != 1 {
			t.Fatalf("%s: %d entries, %v", c.job, len(entries), err)
		}
		m := stream.Message{ID: entries[0].ID, Values: entries[0].Values}
		format, _ := m.Values[stream.FieldFormat].(string)
		if format != c.format || wire.IsGroupBinary([]byte(m.Values[stream.FieldGroup].(string))) != (c.format != "") {
			t.Errorf("%s: format field %q, want %q", c.job, format, c.format)
		}
		back, err := stream.DecodeGroupEntry(m)
		if err != nil || !reflect.DeepEqual(back, g) {
			t.Errorf("%s: entry does not decode to the group written: %v", c.job, err)
		}
		sink.Close()
	}
	if _, err := openRedisSink(ctx, srv.URL()+"?group_format=msgpack", "x"); err == nil || !strings.Contains(err.Error(), `group_format=: group format "msgpack"`) {
		t.Errorf("group_format=msgpack: %v", err)
	}
}
