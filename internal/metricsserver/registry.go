package metricsserver

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Build names the binary a service runs, for toolrl_build_info.
type Build struct {
	// Version is the release (git describe), set with -ldflags
	// "-X main.version=..."; "" reads "unknown".
	Version string
	// Revision is the git commit, set with -ldflags "-X main.revision=...";
	// "" falls back to the vcs.revision Go stamped into the binary (absent
	// under -buildvcs=false), then to "unknown".
	Revision string
}

// NewRegistry returns the registry every long-running verb serves: the Go
// runtime's collector (go_*), the process collector (process_*) and
// toolrl_build_info{version,revision,goversion} = 1. The verb registers its
// own series with it.
func NewRegistry(b Build) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildInfo(b),
	)
	return reg
}

// Names returns the build's version and revision as toolrl_build_info and
// `toolrl version` show them: the revision falls back to the vcs.revision
// Go stamped into the binary, and either is "unknown" when nothing says.
func (b Build) Names() (version, revision string) {
	version, revision = b.Version, b.Revision
	if revision == "" {
		revision = vcsRevision()
	}
	if version == "" {
		version = "unknown"
	}
	if revision == "" {
		revision = "unknown"
	}
	return version, revision
}

// buildInfo is the toolrl_build_info gauge, always 1, its labels naming
// the build.
func buildInfo(b Build) prometheus.Collector {
	version, revision := b.Names()
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "toolrl_build_info",
		Help: "Always 1; the labels name the toolrl build: version (git describe), revision (git commit) and goversion (the Go toolchain).",
		ConstLabels: prometheus.Labels{
			"version": version, "revision": revision, "goversion": runtime.Version(),
		},
	})
	g.Set(1)
	return g
}

// vcsRevision is the vcs.revision setting of the binary's build info, or "".
func vcsRevision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			return s.Value
		}
	}
	return ""
}
