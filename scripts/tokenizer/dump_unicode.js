'use strict';
// Dumps, as one JSON object on stdout, the Unicode behaviour of the reference
// (npm `tokenizers`) that tokenizer/internal/genunicode turns into
// tokenizer/unicode_ref.go: the \p{L}, \p{N} and \s classes of its regex
// engine, its lowercase mapping, its single-character NFC/NFD/NFKC/NFKD
// results, Rust's char::is_numeric (the Digits pre-tokenizer), and which characters it gives a non-zero canonical combining class.
//
//   go run ./tokenizer/internal/genunicode    (runs this script)
const tokenizers = require('tokenizers');
const { Tokenizer } = tokenizers;

const MAX = 0x10ffff;
// General categories a Split regex may name (\p{Lu} in the GPT-4o pattern,
// \p{P} and \p{S} in DeepSeek's, ...).
const CATEGORIES = ['L', 'Lu', 'Ll', 'Lt', 'Lm', 'Lo', 'M', 'Mn', 'Mc', 'Me', 'N', 'Nd', 'Nl', 'No',
  'P', 'Pc', 'Pd', 'Ps', 'Pe', 'Pi', 'Pf', 'Po', 'S', 'Sm', 'Sc', 'Sk', 'So', 'Z', 'Zs', 'Zl', 'Zp'];
const BATCH = 1 << 15;
const SEP = '\u0001';

const cps = [];
for (let c = 0; c <= MAX; c++) {
  if ((c >= 0xd800 && c <= 0xdfff) || c === 1) continue;
  cps.push(c);
}

function batches() {
  const out = [];
  for (let i = 0; i < cps.length; i += BATCH) out.push(cps.slice(i, i + BATCH));
  return out;
}

// classify returns the characters the regex (the reference's own engine)
// matches: a Replace normalizer marks them, a one-char Split keeps one id each.
async function classify(regex) {
  const tok = Tokenizer.fromString(JSON.stringify({
    version: '1.0', truncation: null, padding: null, added_tokens: [],
    normalizer: { type: 'Replace', pattern: { Regex: regex }, content: SEP },
    pre_tokenizer: { type: 'Split', pattern: { Regex: '[\\s\\S]' }, behavior: 'Isolated', invert: false },
    post_processor: null, decoder: null,
    model: { type: 'WordLevel', vocab: { '[UNK]': 0, [SEP]: 1 }, unk_token: '[UNK]' },
  }));
  const set = [];
  for (const batch of batches()) {
    const ids = (await tok.encode(batch.map((c) => String.fromCodePoint(c)).join(''), null, { addSpecialTokens: false })).getIds();
    if (ids.length !== batch.length) throw new Error(`classify ${regex}: ${ids.length} ids for ${batch.length} chars`);
    batch.forEach((c, k) => { if (ids[k] === 1) set.push(c); });
  }
  return set;
}

// rustNumeric returns the characters Rust's char::is_numeric accepts, read
// from the Digits pre-tokenizer: with individual digits each one is isolated.
function rustNumeric() {
  const p = tokenizers.digitsPreTokenizer(true);
  const set = [];
  for (const batch of batches()) {
    const chars = batch.filter((c) => c !== 0x61);
    for (const [piece] of p.preTokenizeString(chars.map((c) => String.fromCodePoint(c)).join('a'))) {
      if (!piece.includes('a')) set.push(piece.codePointAt(0));
    }
  }
  return set;
}

// perChar applies a normalizer to every character alone and keeps the
// characters it changes.
function perChar(normalizer, wrap = (s) => s, unwrap = (s) => s) {
  const out = {};
  for (const batch of batches()) {
    const res = normalizer.normalizeString(batch.map((c) => wrap(String.fromCodePoint(c))).join(SEP)).split(SEP);
    if (res.length !== batch.length) throw new Error('separator changed');
    batch.forEach((c, k) => {
      const r = unwrap(res[k]);
      if (r !== wrap(String.fromCodePoint(c))) out[c] = r;
    });
  }
  return out;
}

async function main() {
  const nfd = tokenizers.nfdNormalizer();
  // A character has canonical combining class 0 in the reference when it is
  // reordered neither after U+0301 (ccc 230) nor before U+0316 (ccc 220).
  const after = perChar(nfd, (s) => '\u0301' + s);
  const before = perChar(nfd, (s) => s + '\u0316');
  const nfdSingle = perChar(nfd);
  const nonZeroCCC = [];
  for (const c of cps) {
    const d = nfdSingle[c] ?? String.fromCodePoint(c);
    const a = after[c] ?? '\u0301' + String.fromCodePoint(c);
    const b = before[c] ?? String.fromCodePoint(c) + '\u0316';
    if (a !== '\u0301' + d || b !== d + '\u0316') nonZeroCCC.push(c);
  }
  const out = {
    reference: `tokenizers@${require('tokenizers/package.json').version}`,
    letter: await classify('\\p{L}'),
    number: await classify('\\p{N}'),
    categories: Object.fromEntries(await Promise.all(CATEGORIES.map(async (c) => [c, await classify(`\\p{${c}}`)]))),
    numeric: rustNumeric(),
    space: await classify('\\s'),
    lower: perChar(tokenizers.lowercase()),
    nfc: perChar(tokenizers.nfcNormalizer()),
    nfd: nfdSingle,
    nfkc: perChar(tokenizers.nfkcNormalizer()),
    nfkd: perChar(tokenizers.nfkdNormalizer()),
    non_zero_ccc: nonZeroCCC,
  };
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
