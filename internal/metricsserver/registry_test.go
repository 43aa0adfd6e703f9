package metricsserver

import (
	"runtime"
	"testing"
)

// The registry has the Go and process collectors and toolrl_build_info = 1
// with the build's labels; an empty Version reads "unknown", and so does an
// empty Revision when the binary has no vcs.revision.
func TestNewRegistry(t *testing.T) {
	for _, c := range []struct {
		build                   Build
		wantVersion, wantCommit string
	}{
		{Build{Version: "v1.2.3-4-gabc", Revision: "abc123"}, "v1.2.3-4-gabc", "abc123"},
		{Build{}, "unknown", vcsRevision()},
	} {
		families, err := NewRegistry(c.build).Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, f := range families {
			got[f.GetName()] = true
			if f.GetName() != "toolrl_build_info" {
				continue
			}
			m := f.GetMetric()[0]
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if c.wantCommit == "" {
				c.wantCommit = "unknown"
			}
			if m.GetGauge().GetValue() != 1 || labels["version"] != c.wantVersion || labels["revision"] != c.wantCommit ||
				labels["goversion"] != runtime.Version() || len(labels) != 3 {
				t.Errorf("%+v: toolrl_build_info %v = %g, want version %s revision %s goversion %s", c.build, labels,
					m.GetGauge().GetValue(), c.wantVersion, c.wantCommit, runtime.Version())
			}
		}
		for _, name := range []string{"toolrl_build_info", "go_goroutines", "go_memstats_alloc_bytes", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
			if !got[name] {
				t.Errorf("%+v: no %s", c.build, name)
			}
		}
	}
}
