// Tool-use peer baseline for `toolrl bench actor --peer --tools-every P`:
// what a @huggingface/transformers user does to run G samples of one prompt
// that each stop at tool calls. generate() runs the batch with a per-row
// StoppingCriteria that stops each row at its next pause point; then the
// injected tool-result tokens are appended to every paused row and generate()
// is called again on each row's whole history (prompt + its sampled tokens +
// injected tokens, left-padded, full re-prefill), until every row has sampled
// NEW tokens.
//
// The schedule is toolrl's (bench benchPauseInterval, benchPausePoints):
// row i pauses after every P + i%4 sampled tokens, except at its NEW-th token,
// which ends it; each pause injects the INJECT ids 'a' + (7j mod 26).
// Sampling as in peer.mjs: do_sample, temperature 1, top_k 50, EOS suppressed.
//
// Prints one JSON object: {"g", "prompt_len", "new_tokens", "pause_every",
// "inject_tokens", "generated" (real sampled tokens, no pads or tokens sampled
// after a row's stop point), "pauses" (injections followed by more sampling),
// "generate_calls", "prefilled" (real history tokens fed to generate(),
// pads excluded), "seconds", "tokens_per_s", "ort_version"}.
//
// usage: node peer_tools.mjs MODEL_DIR G PROMPT_LEN NEW_TOKENS THREADS PAUSE_EVERY INJECT_TOKENS
import fs from 'node:fs';
import path from 'node:path';
import { env, AutoModelForCausalLM, Tensor, StoppingCriteria } from '@huggingface/transformers';
import * as ort from 'onnxruntime-node';

const [dir, gArg, lenArg, newArg, threadsArg, everyArg, injectArg] = process.argv.slice(2);
if (!dir || !gArg || !lenArg || !newArg || !everyArg || !injectArg) {
  console.error('usage: node peer_tools.mjs MODEL_DIR G PROMPT_LEN NEW_TOKENS THREADS PAUSE_EVERY INJECT_TOKENS');
  process.exit(2);
}
const G = Number(gArg), L = Number(lenArg), N = Number(newArg);
const threads = Number(threadsArg ?? 0), P = Number(everyArg), INJ = Number(injectArg);
if (!(P > 0)) {
  console.error(`peer_tools.mjs: PAUSE_EVERY ${everyArg}: want a positive integer`);
  process.exit(2);
}

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(dir)) + path.sep;
const name = path.basename(path.resolve(dir));

const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
const firstId = (v) => (Array.isArray(v) ? v[0] : v);
const padId = BigInt(firstId(config.pad_token_id) ?? firstId(config.eos_token_id) ?? 0);

const session_options = threads > 0 ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {};
const model = await AutoModelForCausalLM.from_pretrained(name, {
  local_files_only: true, device: 'cpu', dtype: 'fp32', session_options,
});
const settings = { do_sample: true, temperature: 1, top_k: 50, top_p: 1 };

// toolrl's benchmark ids: 'a' + (7i mod 26).
const benchIds = (n) => Array.from({ length: n }, (_, i) => BigInt(97 + ((i * 7) % 26)));
const prompt = benchIds(L), inject = benchIds(INJ);
// toolrl's benchPauseInterval (bench/workload.go).
const interval = (i) => P + (i % 4);

// StopAtPause stops row r once it has sampled targets[r] tokens in this call.
// generate() keeps sampling a stopped row until every row has stopped; those
// extra tokens are dropped by the caller.
class StopAtPause extends StoppingCriteria {
  constructor(inputLen, targets) {
    super();
    this.inputLen = inputLen;
    this.targets = targets;
  }
  _call(input_ids) {
    return input_ids.map((ids, r) => ids.length - this.inputLen >= this.targets[r]);
  }
}

// rollout runs the G rows to n sampled tokens each with the pause schedule.
async function rollout(n) {
  const hist = Array.from({ length: G }, () => prompt.slice());
  const sampled = new Array(G).fill(0);
  let generated = 0, pauses = 0, calls = 0, prefilled = 0;
  for (;;) {
    const rows = [];
    for (let i = 0; i < G; i++) if (sampled[i] < n) rows.push(i);
    if (rows.length === 0) break;
    // Each row runs to its next pause point (or to n).
    const targets = rows.map((i) => Math.min((Math.floor(sampled[i] / interval(i)) + 1) * interval(i), n) - sampled[i]);
    const B = rows.length, T = Math.max(...rows.map((i) => hist[i].length));
    const ids = new BigInt64Array(B * T).fill(padId), mask = new BigInt64Array(B * T);
    rows.forEach((i, r) => {
      const h = hist[i], off = r * T + T - h.length;
      for (let j = 0; j < h.length; j++) { ids[off + j] = h[j]; mask[off + j] = 1n; }
      prefilled += h.length;
    });
    const maxNew = Math.max(...targets);
    const out = await model.generate({
      input_ids: new Tensor('int64', ids, [B, T]),
      attention_mask: new Tensor('int64', mask, [B, T]),
      ...settings, max_new_tokens: maxNew, min_new_tokens: maxNew,
      stopping_criteria: [new StopAtPause(T, targets)],
    });
    calls++;
    const W = out.dims[1];
    if (W - T < maxNew) throw new Error(`generate() returned ${W - T} new tokens, want ${maxNew}`);
    rows.forEach((i, r) => {
      const toks = out.data.slice(r * W + T, r * W + T + targets[r]);
      for (const t of toks) hist[i].push(t);
      sampled[i] += targets[r];
      generated += targets[r];
      if (sampled[i] < n) {
        for (const t of inject) hist[i].push(t);
        pauses++;
      }
    });
  }
  return { generated, pauses, calls, prefilled };
}

// Warm up (session initialisation, first-run allocations).
await rollout(Math.min(N, P + 1));

const start = process.hrtime.bigint();
const r = await rollout(N);
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
console.log(JSON.stringify({
  g: G, prompt_len: L, new_tokens: N, pause_every: P, inject_tokens: INJ,
  generated: r.generated, pauses: r.pauses, generate_calls: r.calls, prefilled: r.prefilled,
  seconds, tokens_per_s: r.generated / seconds, ort_version: ort.env.versions?.common ?? '',
}));
await model.dispose();
