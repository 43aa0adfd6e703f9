'use strict';
// Reads tokenizer/testdata/tokenizers.txt and builds each listed tokenizer.json
// (base file plus optional patch), exactly as tokenizer/golden_test.go does.
const fs = require('fs');
const path = require('path');

function repoRoot() {
  return path.resolve(__dirname, '..', '..');
}

function listTokenizers() {
  const root = repoRoot();
  const text = fs.readFileSync(path.join(root, 'tokenizer', 'testdata', 'tokenizers.txt'), 'utf8');
  const out = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const [name, file, patch] = line.split(/\s+/);
    out.push({ name, file, patch });
  }
  return out;
}

function loadTokenizerJSON(entry) {
  const root = repoRoot();
  let text = fs.readFileSync(path.join(root, entry.file), 'utf8');
  if (!entry.patch) return text;
  const base = JSON.parse(text);
  const patch = JSON.parse(fs.readFileSync(path.join(root, 'tokenizer', 'testdata', 'variants', entry.patch), 'utf8'));
  for (const [k, v] of Object.entries(patch)) {
    if (k === 'added_tokens_append') base.added_tokens.push(...v);
    else base[k] = v;
  }
  return JSON.stringify(base);
}

module.exports = { repoRoot, listTokenizers, loadTokenizerJSON };
