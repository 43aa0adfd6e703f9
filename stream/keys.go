package stream

import (
	"fmt"
	"strings"
)

// Consumer groups toolrl creates on its streams.
const (
	// ActorsGroup consumes the prompts stream (distributed actors).
	ActorsGroup = "actors"
	// AdvantageGroup consumes the groups stream (the advantage service).
	AdvantageGroup = "advantage"
)

// Keys are the Redis keys of one job. Every key embeds the hash tag {job}, so
// in a Redis Cluster they all live in one slot and one transaction or Lua
// script may touch any of them together.
type Keys struct {
	// Job is the job name the keys were made from.
	Job string
	// Prompts (toolrl:{job}:prompts) is the work queue of distributed actors;
	// see the FieldPrompt constants for its fields.
	Prompts string
	// Queued (toolrl:{job}:prompts:queued) is the set of prompts already
	// enqueued, by prompt key (the prompt id in iteration 0, id@k in
	// iteration k), so enqueueing a prompt twice in one iteration adds
	// nothing and every iteration enqueues it anew.
	Queued string
	// Groups (toolrl:{job}:groups) holds one entry per complete group of
	// trajectories; see the Field* constants for its fields.
	Groups string
	// Advantages (toolrl:{job}:advantages) holds one entry per advantage
	// record, for trainers.
	Advantages string
	// Dead (toolrl:{job}:dead) holds entries that could not be processed,
	// with the reason.
	Dead string
	// PolicyVersion (toolrl:{job}:policy_version) is a string key holding the
	// trainer's current policy version (a decimal integer).
	PolicyVersion string
	// Policy (toolrl:{job}:policy) is a string key holding the latest
	// announced policy version as JSON (PolicyPointer): its number, the
	// directory of its folder in the policy store and when it was published.
	// AnnouncePolicy sets it together with PolicyVersion.
	Policy string
	// GroupsWritten (toolrl:{job}:groups:written) is the set of group ids
	// already added to Groups: it makes Producer.AddGroup idempotent. A
	// group id is traj.GroupID(job, prompt, iteration), so each iteration
	// of a prompt is written once.
	GroupsWritten string
	// GroupsDone (toolrl:{job}:groups:done) is the set of group ids whose
	// advantage records were written: it makes the service exactly-once, per
	// (job, prompt, iteration).
	GroupsDone string
	// Settings (toolrl:{job}:settings) is a string key holding the JSON
	// settings record (sink.Settings) of the run or worker that
	// first wrote groups into the job: later workers and resumed runs must
	// agree with it.
	Settings string
}

// JobKeys returns the keys of job. The job name must not contain '{' or '}'
// (see ValidateJob): they would break the hash tag.
func JobKeys(job string) Keys {
	p := "toolrl:{" + job + "}:"
	return Keys{
		Job: job, Prompts: p + "prompts", Queued: p + "prompts:queued", Groups: p + "groups", Advantages: p + "advantages",
		Dead: p + "dead", PolicyVersion: p + "policy_version", Policy: p + "policy",
		GroupsWritten: p + "groups:written", GroupsDone: p + "groups:done", Settings: p + "settings",
	}
}

// ValidateJob reports whether job can name a job's keys: non-empty, without
// braces, whitespace or control characters.
func ValidateJob(job string) error {
	if job == "" {
		return fmt.Errorf("redis: job name is empty")
	}
	if i := strings.IndexFunc(job, func(r rune) bool { return r == '{' || r == '}' || r <= ' ' || r == 0x7f }); i >= 0 {
		return fmt.Errorf("redis: job name %q has %q at byte %d (braces, spaces and control characters are not allowed)", job, job[i], i)
	}
	return nil
}
