// Package testsupport starts the real services toolrl's tests run against: a
// redis-server (optionally with AOF) or a 3-master Redis Cluster on loopback,
// each with its own temp dir, and the ONNX Runtime library; CheckMetrics runs
// promtool on a /metrics body. Where a service is
// missing, tests skip locally but fail when CI=true, so CI never passes by
// skipping.
package testsupport
