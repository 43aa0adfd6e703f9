// The reference for toolrl's chat renderer: transformers.js's
// apply_chat_template on a local model folder (tokenizer.json +
// tokenizer_config.json; chat_template.jinja when present is the template, as
// in transformers). Input (stdin): {"dir": "...", "cases": [{messages, tools,
// add_generation_prompt, kwargs}]}. Output (stdout): a JSON array with
// {"text", "ids"} per case, or {"error"} where the template raises.
import fs from "node:fs";
import path from "node:path";
import { AutoTokenizer, env } from "@huggingface/transformers";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { dir, cases } = JSON.parse(input);
env.allowRemoteModels = false;
env.localModelPath = path.dirname(path.resolve(dir)) + path.sep;
const tokenizer = await AutoTokenizer.from_pretrained(path.basename(path.resolve(dir)), { local_files_only: true });
const file = path.join(dir, "chat_template.jinja");
const chat_template = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;

const out = cases.map((c) => {
  const options = { ...(c.kwargs ?? {}), tools: c.tools ?? null, add_generation_prompt: c.add_generation_prompt, chat_template };
  try {
    const text = tokenizer.apply_chat_template(c.messages, { ...options, tokenize: false });
    const ids = tokenizer.apply_chat_template(c.messages, { ...options, tokenize: true, return_tensor: false, return_dict: false });
    return { text, ids };
  } catch (e) {
    return { error: String(e.message ?? e) };
  }
});
process.stdout.write(JSON.stringify(out));
