// Package tools is the environment side of tool-use RL: the Tool interface,
// the registry read from a YAML or JSON file, streaming call parsers for the
// bracket form ([CALC: 12 * 34]) and the Hermes/Qwen form
// (<tool_call>{...}</tool_call>), an executor that runs calls under a global
// and a per-tool concurrency limit with per-call timeouts. The reward parts
// computed from what the calls did are package reward's.
//
// A rollout uses it like this: an actor feeds every decoded text delta of a
// sequence to a Parser and pauses the sequence as soon as a call completes; the
// orchestrator runs the call through an Episode (which applies the per-turn and
// per-trajectory caps) and injects BracketInjection or HermesInjection of the
// result into the sequence, with loss mask 0.
//
// Built-in tools (calculator, python, search, http, mcp) live in
// subpackages that do not import this one; this package adapts them to Tool.
package tools
