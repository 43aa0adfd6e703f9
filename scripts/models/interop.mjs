// Loads a toolrl-built model folder with @huggingface/transformers (Node,
// onnxruntime-node backend, local files only), runs one forward over the
// left-padded batch of prompts and greedy-decodes it. Prints one JSON object
// on stdout:
//   {"chat": <chat template output or null>,
//    "input_ids": [[...]], "attention_mask": [[...]],   (the padded batch)
//    "logits": {"dims": [B, S, V], "data": [...]},      (the forward's logits)
//    "rows": [{"prompt_ids": [...], "new_ids": [...]}, ...]}
// new_ids are the generated tokens up to and including the first eos (any
// id of generation_config's eos list).
//
// usage: node interop.mjs MODEL_DIR MAX_NEW_TOKENS PROMPT...
import path from 'node:path';
import { env, AutoTokenizer, AutoModelForCausalLM } from '@huggingface/transformers';

const [dir, maxNewArg, ...prompts] = process.argv.slice(2);
if (!dir || !maxNewArg || prompts.length === 0) {
  console.error('usage: node interop.mjs MODEL_DIR MAX_NEW_TOKENS PROMPT...');
  process.exit(2);
}
const maxNew = Number(maxNewArg);

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.localModelPath = path.dirname(path.resolve(dir)) + path.sep;
const name = path.basename(path.resolve(dir));

const tokenizer = await AutoTokenizer.from_pretrained(name, { local_files_only: true });
const model = await AutoModelForCausalLM.from_pretrained(name, {
  local_files_only: true,
  device: 'cpu',
  dtype: 'fp32',
});

// A folder without a chat template (the calc policy's prompt format is its
// own) prints "chat": null.
const chat = tokenizer.chat_template
  ? tokenizer.apply_chat_template(
    [{ role: 'user', content: 'What is 2+3?' }],
    { tokenize: false, add_generation_prompt: true },
  )
  : null;

tokenizer.padding_side = 'left';
const enc = tokenizer(prompts, { padding: true });
// One forward over the padded batch: transformers.js derives position_ids
// from the mask and feeds empty past key/values itself.
const fwd = await model({ ...enc });
const logits = { dims: fwd.logits.dims, data: Array.from(fwd.logits.data) };
const out = await model.generate({ ...enc, max_new_tokens: maxNew, do_sample: false });

const eos = [model.generation_config.eos_token_id].flat();
const width = enc.input_ids.dims[1];
const ids = enc.input_ids.tolist().map((r) => r.map(Number));
const mask = enc.attention_mask.tolist().map((r) => r.map(Number));
const seqs = out.tolist().map((r) => r.map(Number));
const rows = seqs.map((seq, b) => {
  const promptIds = ids[b].filter((_, i) => mask[b][i] === 1);
  const newIds = [];
  for (const t of seq.slice(width)) {
    newIds.push(t);
    if (eos.includes(t)) break;
  }
  return { prompt_ids: promptIds, new_ids: newIds };
});
console.log(JSON.stringify({ chat, input_ids: ids, attention_mask: mask, logits, rows }));
await model.dispose();
