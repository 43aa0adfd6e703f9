package learner

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/toolrl/toolrl/policystore"
	"github.com/toolrl/toolrl/setting"
)

// JobSpec is toolrl learn's own settings beside Spec: where the records
// come from, where versions go and how the run goes; one declaration each
// (the flag, its default and help), bound by setting.Bind. Check refuses a
// combination the run cannot use, naming the flags.
type JobSpec struct {
	Model        setting.Value[string]        `yaml:"model" flag:"model" usage:"model folder of version 0 (config.json, model.safetensors, tokenizer)"`
	In           setting.Value[string]        `yaml:"in" flag:"in" usage:"advantage records, JSONL or Parquet"`
	Redis        setting.Value[string]        `yaml:"redis" flag:"redis" usage:"Redis URL: read the job's advantages stream (see docs/redis.md)"`
	Job          setting.Value[string]        `yaml:"job" flag:"job" usage:"job name of the Redis keys toolrl:{JOB}:*"`
	Store        setting.Value[string]        `yaml:"store" flag:"store" usage:"policy store folder the versions are published into"`
	Metrics      setting.Value[string]        `yaml:"metrics" flag:"metrics" usage:"append one JSON line of metrics per update to this file"`
	Listen       setting.Value[string]        `yaml:"listen" flag:"listen" default:"127.0.0.1:9465" usage:"with --redis: address for /metrics and /healthz (empty: none)"`
	Group        setting.Value[string]        `yaml:"group" flag:"group" default:"learner" usage:"with --redis: the learner's consumer group"`
	Consumer     setting.Value[string]        `yaml:"consumer" flag:"consumer" default:"learner" usage:"with --redis: consumer name (keep it across restarts: a restart finds its pending records by it)"`
	Batch        setting.Value[int]           `yaml:"batch" flag:"batch" default:"0" usage:"records per update (0: the whole file with --in, 256 with --redis)"`
	MaxWait      setting.Value[time.Duration] `yaml:"max_wait" flag:"max-wait" default:"10s" usage:"with --redis: train on a partial batch after waiting this long"`
	PublishEvery setting.Value[int]           `yaml:"publish_every" flag:"publish-every" default:"1" usage:"publish a version every K updates (with --in, unset: once, at the end)"`
	MaxUpdates   setting.Value[int]           `yaml:"max_updates" flag:"max-updates" default:"0" usage:"stop after N updates that trained, their version published (0: run until the file ends or a signal)"`
	Keep         setting.Value[int]           `yaml:"keep" flag:"keep" default:"0" usage:"keep only the newest N versions in the store (0: keep all)"`
	Version      setting.Value[int64]         `yaml:"version" flag:"version" default:"0" usage:"the policy version of --model (records are tagged with it)"`
	RolloutQuant setting.Value[string]        `yaml:"rollout_quantization" flag:"rollout-quantization" usage:"also publish each version's quantized copy for actors (STORE/vN/quantized/): int{8,4}-b{block}-acc{0,4}[-lmhead], e.g. int8-b32-acc4"`
	Precision    setting.Value[string]        `yaml:"precision" flag:"precision" default:"float32" usage:"float32 | float64: the precision of the forward, backward and AdamW (float64: to check another trainer against this one; versions are published as float32 either way)"`
	Temperature  setting.Value[float64]       `yaml:"temperature" flag:"temperature" default:"0" usage:"sampling temperature of records that carry none (v1); 0: such a record is an error"`
}

// Check refuses what the run cannot use, naming the flag: a missing
// --model or --store, both or neither of --in and --redis, --redis without
// --job, and values out of range. ApplyDefaults first.
func (s *JobSpec) Check() error {
	switch {
	case s.Model.Get() == "":
		return errors.New("--model is required")
	case s.Store.Get() == "":
		return errors.New("--store is required")
	case (s.In.Get() == "") == (s.Redis.Get() == ""):
		return errors.New("give exactly one of --in FILE and --redis URL")
	case s.Redis.Get() != "" && s.Job.Get() == "":
		return errors.New("--redis needs --job")
	case s.Batch.Get() < 0:
		return fmt.Errorf("--batch %d: want ≥ 0", s.Batch.Get())
	case s.PublishEvery.Get() < 1:
		return fmt.Errorf("--publish-every %d: want ≥ 1", s.PublishEvery.Get())
	case s.MaxUpdates.Get() < 0:
		return fmt.Errorf("--max-updates %d: want ≥ 0", s.MaxUpdates.Get())
	case s.Keep.Get() < 0:
		return fmt.Errorf("--keep %d: want ≥ 0", s.Keep.Get())
	case s.Version.Get() < 0:
		return fmt.Errorf("--version %d: want ≥ 0", s.Version.Get())
	case s.Temperature.Get() < 0:
		return fmt.Errorf("--temperature %g: want > 0 (or 0 for none)", s.Temperature.Get())
	case s.Redis.Get() != "" && s.MaxWait.Get() <= 0:
		return fmt.Errorf("--max-wait %v: want a duration > 0", s.MaxWait.Get())
	}
	return nil
}

// NewJob is the run the settings ask for, publishing into store with base's
// files (Job.Base), logging to logger and writing its readable lines to
// progress. With --in and no --publish-every given it publishes once, at
// the end of the file.
func (s *JobSpec) NewJob(store *policystore.Store, base Base, logger *slog.Logger, progress io.Writer) Job {
	j := Job{
		Store: store, Base: base, In: s.In.Get(), Redis: s.Redis.Get(), Batch: s.Batch.Get(),
		Stream:       StreamOptions{Job: s.Job.Get(), Group: s.Group.Get(), Consumer: s.Consumer.Get(), MaxWait: s.MaxWait.Get()},
		PublishEvery: s.PublishEvery.Get(), MaxUpdates: s.MaxUpdates.Get(), Keep: s.Keep.Get(), MetricsPath: s.Metrics.Get(),
		Logger: logger, Progress: progress,
	}
	if j.In != "" && s.PublishEvery.Source() != setting.Flag {
		j.PublishEvery = 0 // once, at the end
	}
	return j
}
