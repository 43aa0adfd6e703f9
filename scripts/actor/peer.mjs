// Peer baseline for `toolrl bench actor --peer`: @huggingface/transformers
// generate() in Node (onnxruntime-node backend, CPU, fp32) on a toolrl model
// folder, sampling G sequences of one prompt with the settings toolrl uses
// (do_sample, temperature 1, top_k 50, exactly NEW new tokens each).
// Prints one JSON object: {"g", "prompt_len", "new_tokens", "generated",
// "seconds", "tokens_per_s", "ort_version"}.
//
// usage: node peer.mjs MODEL_DIR G PROMPT_LEN NEW_TOKENS THREADS
import path from 'node:path';
import { env, AutoModelForCausalLM, Tensor } from '@huggingface/transformers';
import * as ort from 'onnxruntime-node';

const [dir, gArg, lenArg, newArg, threadsArg] = process.argv.slice(2);
if (!dir || !gArg || !lenArg || !newArg) {
  console.error('usage: node peer.mjs MODEL_DIR G PROMPT_LEN NEW_TOKENS [THREADS]');
  process.exit(2);
}
const G = Number(gArg), L = Number(lenArg), N = Number(newArg);
const threads = Number(threadsArg ?? 0);

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(dir)) + path.sep;
const name = path.basename(path.resolve(dir));

const session_options = threads > 0 ? { intraOpNumThreads: threads, interOpNumThreads: 1 } : {};
const model = await AutoModelForCausalLM.from_pretrained(name, {
  local_files_only: true, device: 'cpu', dtype: 'fp32', session_options,
});

// The same prompt as toolrl's benchmark: byte ids 'a' + (7i mod 26).
const ids = new BigInt64Array(G * L);
for (let b = 0; b < G; b++) for (let i = 0; i < L; i++) ids[b * L + i] = BigInt(97 + ((i * 7) % 26));
const input_ids = new Tensor('int64', ids, [G, L]);
const attention_mask = new Tensor('int64', new BigInt64Array(G * L).fill(1n), [G, L]);
const settings = { do_sample: true, temperature: 1, top_k: 50, top_p: 1 };

// Warm up (session initialisation, first-run allocations).
await model.generate({ input_ids, attention_mask, ...settings, max_new_tokens: 2, min_new_tokens: 2 });

const start = process.hrtime.bigint();
const out = await model.generate({ input_ids, attention_mask, ...settings, max_new_tokens: N, min_new_tokens: N });
const seconds = Number(process.hrtime.bigint() - start) / 1e9;
const generated = (out.dims[1] - L) * out.dims[0];
console.log(JSON.stringify({
  g: G, prompt_len: L, new_tokens: N, generated, seconds,
  tokens_per_s: generated / seconds, ort_version: ort.env.versions?.common ?? '',
}));
await model.dispose();
