'use strict';
// Differential check beyond the committed goldens: seeded random strings are
// encoded (with special tokens) and the reference's ids decoded (with and
// without skipping special tokens) by the npm reference and by
// `toolrl tokenize`, for every tokenizer in tokenizer/testdata/tokenizers.txt.
//
//   node scripts/tokenizer/diff.js BIN [seed] [count]     (make tokenizer-diff)
//
// Prints the mismatch count per tokenizer and exits 1 when any is non-zero.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');
const { Tokenizer } = require('tokenizers');
const { listTokenizers, loadTokenizerJSON } = require('./list.js');

function mulberry32(seed) {
  return function () {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomStrings(seed, count) {
  const rnd = mulberry32(seed);
  const ws = [9, 10, 13, 32, 0xa0, 0x3000, 0x85, 0x2028, 0xb, 0xc];
  const out = [];
  for (let i = 0; i < count; i++) {
    const n = 1 + Math.floor(rnd() * 60);
    let s = '';
    for (let j = 0; j < n; j++) {
      const r = rnd();
      let cp = r < 0.3 ? 0x20 + Math.floor(rnd() * 95)
        : r < 0.4 ? ws[Math.floor(rnd() * ws.length)]
          : r < 0.9 ? Math.floor(rnd() * 0x3000) : 0x10000 + Math.floor(rnd() * 0x20000);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    out.push(s);
  }
  return out;
}

async function main() {
  const [bin, seedArg, countArg] = process.argv.slice(2);
  if (!bin) throw new Error('usage: diff.js BIN [seed] [count]');
  const texts = randomStrings(Number(seedArg || 1), Number(countArg || 2000));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'toolrl-tokdiff-'));
  const run = (args, input) => execFileSync(bin, ['tokenize', ...args], { input, maxBuffer: 1 << 28 }).toString().trim().split('\n');
  let failed = false;
  try {
    const textFile = texts.map((s) => JSON.stringify(s)).join('\n') + '\n';
    for (const entry of listTokenizers()) {
      const json = loadTokenizerJSON(entry);
      const file = path.join(dir, `${entry.name}.json`);
      fs.writeFileSync(file, json);
      const tok = Tokenizer.fromString(json);
      const got = run(['--tokenizer', file, '--json', '--add-special'], textFile);
      const refIds = [];
      let bad = 0;
      for (let i = 0; i < texts.length; i++) {
        const ids = (await tok.encode(texts[i], null, { addSpecialTokens: true })).getIds();
        refIds.push(ids);
        if (JSON.stringify(ids) !== got[i]) {
          if (bad < 3) console.log(`${entry.name} encode ${JSON.stringify(texts[i])}\n  ref ${JSON.stringify(ids)}\n  go  ${got[i]}`);
          bad++;
        }
      }
      const idsFile = refIds.map((a) => JSON.stringify(a)).join('\n') + '\n';
      const badDecode = [];
      for (const skip of [false, true]) {
        const dec = run(['--tokenizer', file, '--decode', ...(skip ? ['--skip-special'] : [])], idsFile);
        let n = 0;
        for (let i = 0; i < refIds.length; i++) {
          const want = await tok.decode(refIds[i], skip);
          if (want !== JSON.parse(dec[i])) {
            if (n < 3) console.log(`${entry.name} decode skip=${skip} ${JSON.stringify(refIds[i])}\n  ref ${JSON.stringify(want)}\n  go  ${dec[i]}`);
            n++;
          }
        }
        badDecode.push(n);
      }
      console.log(`${entry.name}: ${texts.length} strings, encode mismatches ${bad}, decode mismatches ${badDecode[0]} / ${badDecode[1]} (skip special)`);
      failed = failed || bad > 0 || badDecode.some((n) => n > 0);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
