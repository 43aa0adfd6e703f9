package learner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/stream"
)

// Job is a learner run as `toolrl learn` starts it: the learner trains on
// advantage records from a file (In) or from a job's Redis stream (Redis),
// and publishes its versions into Store. It appends one JSON line of
// metrics per update to MetricsPath; from a stream it also announces each
// version on the job's policy pointer and reports to Registry.
type Job struct {
	// Store receives the versions; Base supplies their config and
	// tokenizer files.
	Store *policystore.Store
	Base  Base
	// In is a file of advantage records (JSONL or Parquet), trained on
	// once. Redis is the URL of the job's Redis, whose advantages stream
	// Stream reads (its Job, Group, Consumer and MaxWait; Size and Logger
	// come from Batch and Logger). Exactly one of In and Redis is set.
	In, Redis string
	Stream    StreamOptions
	// Batch is the records of one update (0: the whole file; from a
	// stream, StreamOptions' default 256).
	Batch int
	// PublishEvery publishes a version every PublishEvery updates that
	// trained; 0: every update from a stream, once at the end from a file
	// (its records then all stay within the staleness bound of the start
	// version).
	PublishEvery int
	// MaxUpdates, when > 0, stops after that many updates that trained
	// (RunOptions.MaxUpdates).
	MaxUpdates int
	// Keep, when > 0, prunes the store to its newest Keep versions after
	// each publish.
	Keep int
	// MetricsPath, when set, gets one JSON line of Metrics per update
	// (appended).
	MetricsPath string
	// Registry, when set, gets the learner's Prometheus series (NewPrometheus).
	Registry prometheus.Registerer
	Logger   *slog.Logger
	// OnResume reports the version a run resumed from (a store that
	// already held one); OnUpdate and OnPublish report each update and
	// each published version; OnSummary what the run did, once it has
	// trained (also when training failed).
	OnResume  func(State)
	OnUpdate  func(Metrics)
	OnPublish func(policystore.Version, State)
	OnSummary func(Summary)
	// Progress, when set, gets toolrl learn's readable lines: the resume,
	// each update (Metrics.String), each published version and the
	// summary (Summary.String), besides the On* callbacks.
	Progress io.Writer
}

// progress wraps the On* callbacks with Progress's lines.
func (j Job) progress() Job {
	w := j.Progress
	if w == nil {
		return j
	}
	onResume, onUpdate, onPublish, onSummary := j.OnResume, j.OnUpdate, j.OnPublish, j.OnSummary
	j.OnResume = func(st State) {
		fmt.Fprintf(w, "learn: resumed from %s: version %d, %d optimiser steps; %d records of that version acknowledged\n",
			j.Store.Dir(), st.Version, st.Steps, len(st.Consumed))
		if onResume != nil {
			onResume(st)
		}
	}
	j.OnUpdate = func(m Metrics) {
		fmt.Fprintln(w, m)
		if onUpdate != nil {
			onUpdate(m)
		}
	}
	j.OnPublish = func(v policystore.Version, st State) {
		fmt.Fprintf(w, "learn: published version %d → %s (%d records)\n", v.Number, v.Dir, st.Records)
		if onPublish != nil {
			onPublish(v, st)
		}
	}
	j.OnSummary = func(s Summary) {
		fmt.Fprintln(w, s)
		if onSummary != nil {
			onSummary(s)
		}
	}
	return j
}

// Run opens the job's source, resumes l from the store's latest version
// (ResumeFrom) and trains (Run) until the source is exhausted, MaxUpdates
// updates have trained, or ctx ends (the update in progress is finished
// and published; the caller tells an interrupted run by ctx.Err()). A file
// none of whose records was trained on is an error: nothing was published.
func (j Job) Run(ctx context.Context, l *Learner) (Summary, error) {
	j = j.progress()
	logger := j.Logger
	if logger == nil {
		logger = slog.Default()
	}
	ro := RunOptions{Store: j.Store, Base: j.Base, PublishEvery: j.PublishEvery, MaxUpdates: j.MaxUpdates, Logger: logger}
	if j.In != "" && j.PublishEvery == 0 {
		ro.PublishEvery = math.MaxInt
	}
	var src Source
	var prom *Prometheus
	if j.In != "" {
		fsrc := &FileSource{Path: j.In, Size: j.Batch}
		defer fsrc.Close()
		src = fsrc
	} else {
		client, err := stream.Connect(ctx, j.Redis, stream.ConnectOptions{ClientName: "toolrl-learner"})
		if err != nil {
			return Summary{}, err
		}
		defer client.Close()
		so := j.Stream
		so.Size, so.Logger = j.Batch, logger
		ssrc, err := NewStreamSource(ctx, client, so)
		if err != nil {
			return Summary{}, err
		}
		src = ssrc
		ro.SetAside = true
		keys := stream.JobKeys(so.Job)
		ro.Announce = func(ctx context.Context, v policystore.Version) error {
			err := stream.AnnouncePolicy(ctx, client, keys, stream.PolicyPointer{Version: v.Number, Dir: v.Dir, PublishedAt: v.Manifest.Created})
			if errors.Is(err, stream.ErrPolicyNotNewer) {
				logger.Warn("learn: the Redis policy pointer already holds this version or a newer one; left as it is", "version", v.Number)
				return nil
			}
			return err
		}
		logger.Info("learner", "redis", stream.Redact(j.Redis), "job", so.Job, "group", so.Group, "consumer", so.Consumer)
	}
	if j.Registry != nil {
		var err error
		if prom, err = NewPrometheus(j.Registry); err != nil {
			return Summary{}, err
		}
	}
	st, resumed, err := ResumeFrom(ctx, l, j.Store, src)
	if err != nil {
		return Summary{}, err
	}
	if resumed && j.OnResume != nil {
		j.OnResume(st)
	}
	var metricsFile *os.File
	if j.MetricsPath != "" {
		if metricsFile, err = os.OpenFile(j.MetricsPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
			return Summary{}, fmt.Errorf("metrics: %w", err)
		}
		defer metricsFile.Close()
	}
	var writeErr error
	ro.OnUpdate = func(m Metrics) {
		if j.OnUpdate != nil {
			j.OnUpdate(m)
		}
		if metricsFile != nil && writeErr == nil {
			line, err := json.Marshal(m)
			if err == nil {
				_, err = metricsFile.Write(append(line, '\n'))
			}
			writeErr = err
		}
		if prom != nil {
			prom.ObserveUpdate(m)
		}
	}
	ro.OnPublish = func(v policystore.Version, st State) {
		if j.OnPublish != nil {
			j.OnPublish(v, st)
		}
		if prom != nil {
			prom.ObservePublish(v)
		}
		if j.Keep > 0 {
			if removed, err := j.Store.Prune(j.Keep); err != nil {
				logger.Warn("learn: prune the store", "err", err)
			} else if len(removed) > 0 {
				logger.Info("learn: pruned old versions", "versions", removed)
			}
		}
	}
	sum, err := Run(ctx, l, src, ro)
	if j.OnSummary != nil {
		j.OnSummary(sum)
	}
	if err != nil {
		return sum, err
	}
	if writeErr != nil {
		return sum, fmt.Errorf("metrics %s: %w", j.MetricsPath, writeErr)
	}
	if j.In != "" && sum.Trained == 0 && sum.Records > 0 {
		return sum, fmt.Errorf("none of the %d records of %s was trained on (%d over the staleness bound of %d versions): nothing published",
			sum.Records, j.In, sum.Dropped, l.opts.MaxStaleness)
	}
	return sum, nil
}
