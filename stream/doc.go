// Package stream is toolrl's Redis stream layer: the per-job key layout (all
// keys of a job share the hash tag {job}, so one Redis Cluster slot holds
// them), connecting from a URL to a single server, Sentinel or Cluster, a
// producer with backpressure and an idempotent group writer, and a generic
// consumer-group reader with claiming of idle entries, dead letters and an
// atomic write-output + mark-done + ack step.
//
// Delivery into a stream is at-least-once; this package makes output
// exactly-once: a group is XADDed only if its id was not yet written, and a
// consumed entry's outputs are written, its id marked done and the entry
// acknowledged in one MULTI/EXEC transaction gated by WATCH (gate.go), which
// Redis runs atomically (and persists as one unit in the AOF). The payloads
// never pass through Lua, which would hash every byte of them.
//
// Everything takes a goredis.UniversalClient (github.com/redis/go-redis/v9),
// and is safe for concurrent use unless a type says otherwise.
package stream
