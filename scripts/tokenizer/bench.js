'use strict';
// Reference throughput of the npm `tokenizers` binding on the parity corpus.
//
//   node scripts/tokenizer/bench.js [name ...]
//
// Prints one JSON object per tokenizer: encode and decode seconds over the
// whole corpus, one string per call awaited in turn (as an actor encoding
// prompts and tool results one at a time would), and in one batched call
// (encodeBatch/decodeBatch, the Rust thread pool), with bytes and tokens. tokenizer/bench_test.go runs it
// and divides, so both sides are measured in one run on the same machine.
const { Tokenizer } = require('tokenizers');
const { buildCorpus } = require('./corpus.js');
const { listTokenizers, loadTokenizerJSON } = require('./list.js');

const MIN_SECONDS = Number(process.env.BENCH_MIN_SECONDS || 1);

// timeIt returns the fastest of repeated passes (one warm-up pass first, then
// passes until MIN_SECONDS): the minimum is the least disturbed by other load
// on a shared machine. tokenizer/bench_test.go times Go the same way.
async function timeIt(fn) {
  await fn();
  const start = process.hrtime.bigint();
  let best = Infinity;
  let passes = 0;
  while (passes < 3 || Number(process.hrtime.bigint() - start) / 1e9 < MIN_SECONDS) {
    const t0 = process.hrtime.bigint();
    await fn();
    best = Math.min(best, Number(process.hrtime.bigint() - t0) / 1e9);
    passes++;
  }
  return best;
}

async function main() {
  const corpus = buildCorpus();
  const bytes = corpus.reduce((n, s) => n + Buffer.byteLength(s), 0);
  const only = process.argv.slice(2);
  for (const entry of listTokenizers()) {
    if (only.length && !only.includes(entry.name)) continue;
    const tok = Tokenizer.fromString(loadTokenizerJSON(entry));
    const ids = [];
    for (const s of corpus) ids.push((await tok.encode(s, null, { addSpecialTokens: false })).getIds());
    const tokens = ids.reduce((n, a) => n + a.length, 0);
    const encode = await timeIt(async () => {
      for (const s of corpus) await tok.encode(s, null, { addSpecialTokens: false });
    });
    const decode = await timeIt(async () => {
      for (const a of ids) await tok.decode(a, false);
    });
    // The same work in one batched call each (Rust threads, no per-call
    // round trip): the reference's best case.
    const encodeBatch = await timeIt(async () => {
      await tok.encodeBatch(corpus, { addSpecialTokens: false });
    });
    const decodeBatch = await timeIt(async () => {
      await tok.decodeBatch(ids, false);
    });
    console.log(JSON.stringify({
      name: entry.name, bytes, tokens, strings: corpus.length,
      encode_s: encode, decode_s: decode, encode_batch_s: encodeBatch, decode_batch_s: decodeBatch,
    }));
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
