// Renders chat-template cases with @huggingface/jinja, the reference engine of
// transformers.js. Input (stdin): {"template": "...", "cases": [{messages, tools,
// add_generation_prompt}]}. Output (stdout): a JSON array of rendered strings.
import { Template } from "@huggingface/jinja";

let input = "";
for await (const chunk of process.stdin) input += chunk;
const { template, cases } = JSON.parse(input);
const tmpl = new Template(template);
const out = cases.map((c) => tmpl.render(c));
process.stdout.write(JSON.stringify(out));
