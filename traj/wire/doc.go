// Package wire is toolrl's one codec for its records: trajectories, groups
// (the groups stream's payload and JSONL lines) and advantage records (the
// advantages stream's record field and JSONL lines). Every reader and writer
// of those formats (stream, advantage, export, the CLI) goes through it.
//
// Decoding is strict and fast: one pass over the bytes (no reflection) that
// refuses unknown fields at every level, wrong types and numbers outside a
// field's range (a float beyond float32, an integer that does not fit), then
// validates what it read (traj's Validate). Its errors name the group,
// trajectory or record id when it was read before the fault, and the field
// at fault (e.g. `decode group job/p: trajectories[0] (job/p/0): logprobs:
// [3]: ...`). Schema v1 and v2 data decode. Keys match case-insensitively and
// null reads as the zero value, as in encoding/json.
//
// Encoding writes exactly what encoding/json writes for the traj types
// (tests compare the bytes). DecodeGroupArrays keeps the raw bytes of each
// trajectory's per-token arrays, and AppendRecord copies them into the
// trajectory's advantage record instead of formatting them again: the
// advantage service's path.
package wire
