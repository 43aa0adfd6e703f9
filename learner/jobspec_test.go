package learner

import (
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/model/train"
	"github.com/toolrl/toolrl/setting"
	"github.com/toolrl/toolrl/stream"
)

// The declared defaults are the ones the run's parts name, and Check
// refuses what the run cannot use, naming the flag.
func TestJobSpec(t *testing.T) {
	var s JobSpec
	if err := setting.ApplyDefaults(&s); err != nil {
		t.Fatal(err)
	}
	if s.Group.Get() != stream.LearnerGroup || s.Precision.Get() != string(train.Float32) || s.MaxWait.Get() != 10*time.Second || s.PublishEvery.Get() != 1 {
		t.Errorf("defaults: group %q precision %q max-wait %v publish-every %d", s.Group.Get(), s.Precision.Get(), s.MaxWait.Get(), s.PublishEvery.Get())
	}
	for _, c := range []struct {
		set  []string
		want string
	}{
		{nil, "--model is required"},
		{[]string{"model=m"}, "--store is required"},
		{[]string{"model=m", "store=s"}, "give exactly one of --in FILE and --redis URL"},
		{[]string{"model=m", "store=s", "in=a", "redis=redis://h"}, "give exactly one of --in FILE and --redis URL"},
		{[]string{"model=m", "store=s", "redis=redis://h"}, "--redis needs --job"},
		{[]string{"model=m", "store=s", "in=a", "publish_every=0"}, "--publish-every 0: want ≥ 1"},
		{[]string{"model=m", "store=s", "in=a", "temperature=-1"}, "--temperature -1: want > 0 (or 0 for none)"},
		{[]string{"model=m", "store=s", "redis=r", "job=j", "max_wait=0s"}, "--max-wait 0s: want a duration > 0"},
		{[]string{"model=m", "store=s", "in=a"}, ""},
	} {
		s := JobSpec{}
		if err := setting.SetAll(&s, c.set, setting.Flag); err != nil {
			t.Fatal(err)
		}
		if err := setting.ApplyDefaults(&s); err != nil {
			t.Fatal(err)
		}
		err := s.Check()
		if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%v: %v, want %q", c.set, err, c.want)
		}
	}
}

// NewJob carries the settings over; with --in, a file publishes once at the
// end unless --publish-every is given.
func TestJobSpecNewJob(t *testing.T) {
	var s JobSpec
	if err := setting.SetAll(&s, []string{"in=a.jsonl", "keep=3", "group=g"}, setting.Flag); err != nil {
		t.Fatal(err)
	}
	if err := setting.ApplyDefaults(&s); err != nil {
		t.Fatal(err)
	}
	j := s.NewJob(nil, Base{}, nil, nil)
	if j.In != "a.jsonl" || j.Keep != 3 || j.Stream.Group != "g" || j.Stream.MaxWait != 10*time.Second || j.PublishEvery != 0 {
		t.Errorf("job %+v", j)
	}
	s.PublishEvery.Set(2, setting.Flag)
	if j := s.NewJob(nil, Base{}, nil, nil); j.PublishEvery != 2 {
		t.Errorf("--publish-every 2 with --in: %d", j.PublishEvery)
	}
}
