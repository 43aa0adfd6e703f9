'use strict';
// Writes the parity goldens that tokenizer/golden_test.go reads.
//
//   node scripts/tokenizer/gen_goldens.js [name ...]
//
// For every tokenizer listed in tokenizer/testdata/tokenizers.txt (or only the
// named ones) it encodes the corpus with the Hugging Face reference (npm package
// `tokenizers`, the Rust crate's binding) and writes
// tokenizer/testdata/golden/<name>.jsonl.gz: a header line, then one line per
// corpus string, then one line per seeded random id sequence (decode only).
const fs = require('fs');
const path = require('path');
const zlib = require('zlib');
const crypto = require('crypto');
const { Tokenizer } = require('tokenizers');
const { buildCorpus } = require('./corpus.js');
const { repoRoot, listTokenizers, loadTokenizerJSON } = require('./list.js');

function mulberry32(seed) {
  return function () {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function same(a, b) {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

async function main() {
  const root = repoRoot();
  const corpus = buildCorpus();
  const testdata = path.join(root, 'tokenizer', 'testdata');
  fs.writeFileSync(path.join(testdata, 'corpus.json.gz'),
    zlib.gzipSync(Buffer.from(JSON.stringify(corpus)), { level: 9 }));
  const only = process.argv.slice(2);
  const refVersion = require('tokenizers/package.json').version;
  fs.mkdirSync(path.join(testdata, 'golden'), { recursive: true });
  for (const entry of listTokenizers()) {
    if (only.length && !only.includes(entry.name)) continue;
    const json = loadTokenizerJSON(entry);
    const tok = Tokenizer.fromString(json);
    const lines = [];
    const vocabSize = tok.getVocabSize(true);
    lines.push(JSON.stringify({
      name: entry.name, file: entry.file, patch: entry.patch || '',
      sha256: crypto.createHash('sha256').update(json).digest('hex'),
      reference: `tokenizers@${refVersion}`, strings: corpus.length, vocab_size: vocabSize,
    }));
    for (let i = 0; i < corpus.length; i++) {
      const text = corpus[i];
      const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
      const sp = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
      // Fields equal to what they default to are left out to keep the goldens
      // small: d defaults to the text, sp to ids, dsp and ds to d. Where sp is
      // ids with ids around it, or dsp/ds is d with text around it, only the
      // [before, after] parts are stored (keys spw, dspw, dsw).
      const d = await tok.decode(ids, false);
      const rec = { i, ids };
      if (d !== text) rec.d = d;
      if (!same(ids, sp)) {
        const k = sp.findIndex((_, j) => same(sp.slice(j, j + ids.length), ids));
        if (k >= 0 && ids.length > 0) rec.spw = [sp.slice(0, k), sp.slice(k + ids.length)];
        else rec.sp = sp;
      }
      const wrapText = (full, key, keyWrapped) => {
        if (full === d) return;
        const k = d === '' ? -1 : full.indexOf(d);
        if (k >= 0) rec[keyWrapped] = [full.slice(0, k), full.slice(k + d.length)];
        else rec[key] = full;
      };
      wrapText(await tok.decode(sp, false), 'dsp', 'dspw');
      wrapText(await tok.decode(sp, true), 'ds', 'dsw');
      lines.push(JSON.stringify(rec));
    }
    // Seeded random id sequences: exercises lossy UTF-8 repair, byte fallback and
    // special-token skipping on sequences no encoder would produce.
    const rnd = mulberry32(7);
    for (let i = 0; i < 300; i++) {
      const n = 1 + Math.floor(rnd() * 12);
      const ids = [];
      for (let j = 0; j < n; j++) {
        const r = rnd();
        ids.push(r < 0.3 ? Math.floor(rnd() * 300) : r < 0.4 ? vocabSize - 1 - Math.floor(rnd() * 30) : Math.floor(rnd() * vocabSize));
      }
      lines.push(JSON.stringify({ r: i, ids, d: await tok.decode(ids, false), ds: await tok.decode(ids, true) }));
    }
    const out = path.join(testdata, 'golden', `${entry.name}.jsonl.gz`);
    fs.writeFileSync(out, zlib.gzipSync(Buffer.from(lines.join('\n') + '\n'), { level: 9 }));
    console.log(`${entry.name}: ${corpus.length} strings -> ${path.relative(root, out)} (${fs.statSync(out).size} bytes)`);
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
