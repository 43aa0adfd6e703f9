package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/testsupport"
	"github.com/toolrl/toolrl/stream"
)

// docSeries is one row of a table in docs/metrics.md.
type docSeries struct {
	typ    string
	labels []string // sorted; none for "—"
}

// metricsDoc reads the series tables of docs/metrics.md by section: the
// verb's own ("advantage serve", "learn", "rollout") and "every" (the
// series every verb serves). Rows are "| `name` | type | unit | labels |
// meaning |"; the "Renamed" section is not read.
func metricsDoc(t *testing.T) map[string]map[string]docSeries {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testsupport.RepoRoot(t), "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]map[string]docSeries{}
	var cur map[string]docSeries
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			cur = nil
			for _, s := range []string{"advantage serve", "learn", "rollout", "every"} {
				if strings.HasPrefix(strings.ToLower(h), s) {
					cur = map[string]docSeries{}
					sections[s] = cur
				}
			}
			continue
		}
		if cur == nil || !strings.HasPrefix(line, "| `") {
			continue
		}
		cols := strings.Split(line, "|")
		if len(cols) < 6 {
			t.Fatalf("docs/metrics.md row %q: want | name | type | unit | labels | meaning |", line)
		}
		name := strings.Trim(strings.TrimSpace(cols[1]), "`")
		var labels []string
		for _, l := range strings.Split(cols[4], ",") {
			if l = strings.Trim(strings.TrimSpace(l), "`"); l != "" && l != "—" {
				labels = append(labels, l)
			}
		}
		sort.Strings(labels)
		if _, dup := cur[name]; dup {
			t.Errorf("docs/metrics.md lists %s twice", name)
		}
		cur[name] = docSeries{typ: strings.TrimSpace(cols[2]), labels: labels}
	}
	return sections
}

var sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
var labelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"`)

// checkDocumented compares a verb's /metrics body with docs/metrics.md:
// every family it exposes is in the verb's section or the "every" section,
// with the type and label names the doc gives, and every series of those
// sections is exposed (the tests scrape after work, when all are).
func checkDocumented(t *testing.T, verb, exposition string) {
	t.Helper()
	doc := metricsDoc(t)
	want := map[string]docSeries{}
	for _, s := range []string{verb, "every"} {
		if len(doc[s]) == 0 {
			t.Fatalf("docs/metrics.md has no series table for %q", s)
		}
		for name, d := range doc[s] {
			want[name] = d
		}
	}
	types := map[string]string{}
	labels := map[string]map[string]bool{}
	for _, line := range strings.Split(exposition, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			types[f[0]], labels[f[0]] = f[1], map[string]bool{}
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		family := m[1]
		if _, ok := types[family]; !ok {
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(family, suffix); ok && types[base] == "histogram" {
					family = base
				}
			}
		}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			if l[1] != "le" && l[1] != "quantile" && labels[family] != nil {
				labels[family][l[1]] = true
			}
		}
	}
	for name, typ := range types {
		d, ok := want[name]
		if !ok {
			t.Errorf("%s exposes %s (%s), which docs/metrics.md does not list", verb, name, typ)
			continue
		}
		got := make([]string, 0, len(labels[name]))
		for l := range labels[name] {
			got = append(got, l)
		}
		sort.Strings(got)
		if d.typ != typ || !slices.Equal(got, d.labels) {
			t.Errorf("%s: %s %s with labels %v; docs/metrics.md says %s with %v", verb, name, typ, got, d.typ, d.labels)
		}
	}
	for name := range want {
		if _, ok := types[name]; !ok {
			t.Errorf("docs/metrics.md lists %s for %s, which it does not expose", name, verb)
		}
	}
}

// TestAdvantageServeMetrics runs `toolrl advantage serve --listen` against
// a real redis-server until it has committed two groups, with a trainer
// group on the advantages stream: its /metrics passes `promtool check
// metrics`, matches docs/metrics.md, and has the stream depths.
func TestAdvantageServeMetrics(t *testing.T) {
	bin := toolrlBinary(t, "builds the binary")
	const job = "j"
	r := testsupport.StartRedis(t, testsupport.RedisOptions{})
	ctx := context.Background()
	client, err := stream.Connect(ctx, r.URL(), stream.ConnectOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	keys := stream.JobKeys(job)
	if err := client.XGroupCreateMkStream(ctx, keys.Advantages, "trainer", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.NewProducer(client, stream.ProducerOptions{}).AddGroups(ctx, job, advGroups()); err != nil {
		t.Fatal(err)
	}
	proc := startBackground(t, bin, "advantage", "serve", "--redis", r.URL(), "--job", job, "--listen", "127.0.0.1:0", "--workers", "1")
	fail := func(format string, args ...any) { t.Helper(); proc.fatalf(t, format, args...) }
	addrRE := regexp.MustCompile(`serving /metrics and /healthz" addr=(127\.0\.0\.1:\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	var body string
	for {
		if m := addrRE.FindStringSubmatch(proc.stderr.String()); m != nil {
			resp, err := http.Get("http://" + m[1] + "/metrics")
			if err != nil {
				fail("GET /metrics: %v", err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			if strings.Contains(body, "toolrl_advantage_groups_total 2\n") &&
				strings.Contains(body, `toolrl_advantage_stream_pending_entries{group="advantage",stream="groups"} 0`+"\n") &&
				strings.Contains(body, `toolrl_advantage_stream_lag_entries{group="trainer",stream="advantages"} 6`+"\n") {
				break
			}
		}
		select {
		case <-proc.done:
			fail("advantage serve exited early: %v", proc.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			fail("no metrics address, or /metrics without 2 groups committed and their 6 records undelivered to the trainer within 60 s:\n%s", body)
		}
	}
	for _, s := range []string{`toolrl_advantage_stream_length_entries{stream="groups"} 2`, `toolrl_advantage_stream_length_entries{stream="advantages"} 6`,
		`toolrl_advantage_batch_seconds_count `, `toolrl_build_info{goversion="go`, "process_cpu_seconds_total ", "go_goroutines "} {
		if !strings.Contains(body, s) {
			t.Errorf("/metrics lacks %s", s)
		}
	}
	testsupport.CheckMetrics(t, body)
	checkDocumented(t, "advantage serve", body)
	if err := proc.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-proc.done:
	case <-time.After(30 * time.Second):
		fail("advantage serve did not exit within 30 s of SIGINT")
	}
	var exit *exec.ExitError
	if !errors.As(proc.err, &exit) || exit.ExitCode() != exitInterrupted {
		fail("exit: %v, want code %d", proc.err, exitInterrupted)
	}
}
