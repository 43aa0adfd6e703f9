'use strict';
// Deterministic parity corpus for toolrl's tokenizer goldens.
// Every category the issue names is covered; the random part is seeded, so the
// corpus is the same on every run and every machine.

function mulberry32(seed) {
  return function () {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROSE = [
  'The quick brown fox jumps over the lazy dog.',
  "It's a truth universally acknowledged, that a single man in possession of a good fortune must be in want of a wife.",
  "They'll say we're done; I'd rather we weren't. You've seen what's LEFT, haven't you?",
  'In 1492, Columbus sailed the ocean blue.',
  'Reinforcement learning from verifiable rewards needs exact tokenization.',
  'Hello, world!',
  'HELLO WORLD... hello world?! Hello-World; hello_world',
  "Don't DON'T don't Don'T 'tis 'TIS o'clock rock'n'roll",
  'e.g. i.e. etc. Mr. Smith vs. Dr. Jones, Ph.D.',
  'A man, a plan, a canal: Panama.',
];
const NUMBERS = [
  '12 + 7 = 19', '3.14159265358979', '1,234,567.89', '-42', '2^10 = 1024', '1e-9', '0x1F3A', '007',
  '(17 * 23) - 4 / 2 = 389', '12345678901234567890', '99.5%', '$1,000,000', '1/3 ≈ 0.333', '10:45pm', '2024-11-30',
  'What is 487 * 312? Answer: 151944', '√2 ≈ 1.41421', '½ ¾ ⅞ ² ³ ⁴', '٣٤٥ ١٢', '१२३ ४५६', '12,3', '1 000 000',
];
const CODE = [
  'def add(a, b):\n    return a + b\n',
  'func main() {\n\tfmt.Println("hi")\n}\n',
  'for (let i = 0; i < n; i++) { sum += arr[i]; }',
  'if x != nil {\n\t\treturn fmt.Errorf("read %s: %w", path, err)\n\t}',
  '#include <stdio.h>\nint main(void){printf("%d\\n", 42);return 0;}',
  'SELECT id, name FROM users WHERE age >= 18 ORDER BY name;',
  '{"name": "calculator", "arguments": {"expression": "2+2"}}',
  '<div class="x">&nbsp;&lt;tag&gt;</div>',
  'x = [i**2 for i in range(10) if i % 2 == 0]  # squares',
  '    indented = True\n        more = False\n',
  'a=>b; c->d; e<=f; g>=h; i!==j; k===l; m::n; o..p; q...r',
  '`code` ``double`` ```fenced```',
];
const WHITESPACE = [
  '   ', ' ', '\t', '\n', '\n\n\n', '\r\n', 'a  b   c    d', 'trailing   ', '   leading', 'tab\there\t\tand\t\t\tthere',
  'line1\nline2\n\nline4\n', 'mixed \t\n \t\n  ', '\u00a0nbsp\u00a0', 'a\u2003em\u2009thin', '\n \n \n', 'x\r\ny\rz',
  ' \n', '\n ', '  \n\n  x', 'end with newline\n', 'spaces before newline   \nnext',
];
const CJK = [
  '你好，世界！', '今天天气很好，我们去公园散步吧。', '日本語のテキストです。カタカナとひらがな。', '한국어 문장입니다.',
  '中文English混合text测试123', '「引用」『二重』【括弧】', '漢字かな交じり文', '我有3个苹果和5个梨。',
];
const EMOJI = [
  '😀', '👍🏽', '👨‍👩‍👧‍👦', '🇺🇸🇯🇵', 'I ❤️ Go 🚀🚀🚀', '⚡️🔥💯', 'emoji at end 🎉', '🤖: beep boop', '🏳️‍🌈 flag', '1️⃣ 2️⃣ #️⃣',
];
const COMBINING = [
  'e\u0301', 'cafe\u0301 vs café', 'n\u0303 ñ', 'Zalgo: Z\u0351\u036b\u0343a\u0364\u0307l\u0350g\u0308o\u0489', 'ﬁ ﬂ ﬀ', 'Å Å Å', '한글 한글',
  'ǅ ǆ Ǆ', 'ＦＵＬＬＷＩＤＴＨ ｆｕｌｌ', 'Ⅻ ⅻ', 'İstanbul ıi', 'ß ẞ straße STRASSE', 'ΣΑΣ σας', 'Ωmega ohm Ω',
  'ﷺ', '\u200bzero\u200dwidth\u200c', 'א\u05b0ב\u05b8', 'देवनागरी', 'ไทย ภาษา', 'العربية مرحبا',
];
const SPECIALS = [
  '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<|begin_of_text|>', '<|end_of_text|>', '<|start_header_id|>',
  '<|end_header_id|>', '<|eot_id|>', '<s>', '</s>', '<unk>', '[INST]', '[/INST]', '<tool_call>', '</tool_call>',
  '<tool_response>', '</tool_response>', '<think>', '</think>', '<tool>', '</tool>', '[MASK]', 'calc', 'Résumé', 'résumé',
];
const CHAT = [
  '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
  '<|im_start|>assistant\n<think>\nI should call the calculator.\n</think>\n<tool_call>\n{"name": "calc", "arguments": {"expr": "2+2"}}\n</tool_call><|im_end|>',
  '<|im_start|>user\n<tool_response>\n4\n</tool_response><|im_end|>',
  '<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nHi!<|eot_id|>',
  '<s>[INST] What is the capital of France? [/INST] Paris.</s>',
  '<|endoftext|>Once upon a time<|endoftext|>',
  'text<|im_end|>more<|im_start|>', '<|im_start|><|im_end|>', '<|im_start', 'im_start|>', '<<|im_start|>>',
  '<tool> calc 2+2 </tool>', 'x <tool>y</tool> z', '  <tool>  spaced  </tool>  ', 'calc calcs recalc calc.', '[MASK] a[MASK]b  [MASK]',
  'Résumé RÉSUMÉ résumé Re\u0301sume\u0301', '<tool_call>{"name":"search","arguments":{"q":"go"}}</tool_call>',
  '<s><s></s></s>', ' <s> ', '<unk>x<unk>',
];

const EDGE = [
  "'ſ 'S 'K \u212A 'ſt 'LL 'Ve", 'İstanbul İ', 'ΣΑΣ ΌΣΟΣ', 'x\u0085y\u2028z\u2029w\u00a0\u1680\u180e\u200b\ufeff',
  '\u000b\u000c\u001c\u001d\u001e\u001f', 'a\u0301\u0301 a\u0316\u0301', '१२३४५६७ ௯໦', 'Ⅻ²³¼ ①②', '\u3000\u3000x',
  'x\r\r\n\n\r', '  \t\t  \n\t x', '\u{137F4}=G \u{142B8}_Y \u{10D41}\u{10D50}', '\u{32FF} \u{A7F2} \u{11935}\u{11930}',
  ' \u08D1\u036A', 'ǅ ǈ ǋ ǲ', 'ﬀ ﬁ ﬂ ﬃ ﬄ ﬅ ﬆ',
];

const POOL_RANGES = [
  [0x20, 0x7e], [0x20, 0x7e], [0x20, 0x7e], [0x30, 0x39], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff],
  [0x590, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f], [0x2100, 0x22ff], [0x3000, 0x30ff],
  [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0xfb00, 0xfb4f], [0xfe00, 0xfe0f], [0xff00, 0xffef], [0x1f300, 0x1f6ff],
  [0x1f900, 0x1f9ff], [0x10000, 0x1007f], [0x1d400, 0x1d7ff], [0xe000, 0xe0ff], [0x0, 0x1f],
];
const WS = [' ', ' ', '  ', '\t', '\n', '\r\n', '\u3000', '\u00a0', '\u2028', '\u0085'];

function randomString(rnd, maxLen) {
  const n = 1 + Math.floor(rnd() * maxLen);
  let s = '';
  for (let i = 0; i < n; i++) {
    const r = rnd();
    if (r < 0.15) {
      s += WS[Math.floor(rnd() * WS.length)];
    } else if (r < 0.2) {
      s += SPECIALS[Math.floor(rnd() * SPECIALS.length)];
    } else if (r < 0.3) {
      const words = PROSE[Math.floor(rnd() * PROSE.length)].split(' ');
      s += words[Math.floor(rnd() * words.length)];
    } else {
      const [lo, hi] = POOL_RANGES[Math.floor(rnd() * POOL_RANGES.length)];
      s += String.fromCodePoint(lo + Math.floor(rnd() * (hi - lo + 1)));
    }
  }
  return s;
}

function pick(rnd, arr) {
  return arr[Math.floor(rnd() * arr.length)];
}

// buildCorpus returns the parity corpus: every fixed string of every category,
// then seeded combinations and random strings, about 2,400 strings in all.
function buildCorpus(seed = 20261130) {
  const rnd = mulberry32(seed);
  const out = [''];
  for (const cat of [PROSE, NUMBERS, CODE, WHITESPACE, CJK, EMOJI, COMBINING, SPECIALS, CHAT]) out.push(...cat);
  // arithmetic with varied digit runs (Llama-3 splits digits in threes, Qwen one by one)
  for (let i = 0; i < 150; i++) {
    const a = Math.floor(rnd() * 10 ** (1 + Math.floor(rnd() * 9)));
    const b = Math.floor(rnd() * 10 ** (1 + Math.floor(rnd() * 6)));
    const op = pick(rnd, ['+', '-', '*', '/', ' + ', ' - ', ' * ', ' / ', '^', '%']);
    out.push(pick(rnd, [`${a}${op}${b}`, `${a}${op}${b} = ?`, `calc(${a}${op}${b})`, `Compute ${a}${op}${b}.`]));
  }
  // mixed-category combinations
  const cats = [PROSE, NUMBERS, CODE, WHITESPACE, CJK, EMOJI, COMBINING, SPECIALS, CHAT];
  for (let i = 0; i < 900; i++) {
    const parts = 2 + Math.floor(rnd() * 4);
    let s = '';
    for (let j = 0; j < parts; j++) {
      s += pick(rnd, cats)[Math.floor(rnd() * 1000) % pick(rnd, cats).length] || '';
      s += pick(rnd, ['', ' ', '  ', '\n', '\t', ' \n', '']);
    }
    out.push(s);
  }
  // whitespace runs of every shape
  for (let i = 0; i < 120; i++) {
    let s = '';
    const parts = 1 + Math.floor(rnd() * 6);
    for (let j = 0; j < parts; j++) {
      s += pick(rnd, WS).repeat(1 + Math.floor(rnd() * 5));
      if (rnd() < 0.6) s += pick(rnd, ['x', 'word', '1', '中', '😀', '.', 'é', "'s", '<s>']);
    }
    out.push(s);
  }
  // seeded random strings
  for (let i = 0; i < 1000; i++) out.push(randomString(rnd, i % 10 === 0 ? 300 : 40));
  // edge cases of case folding, whitespace classes and normalization
  out.push(...EDGE);
  // seeded random code points over the first planes: characters newer than
  // Go's Unicode tables, marks whose combining class changed, and so on
  for (let i = 0; i < 400; i++) {
    const n = 1 + Math.floor(rnd() * 30);
    let s = '';
    for (let j = 0; j < n; j++) {
      const r = rnd();
      let cp = r < 0.25 ? 0x20 + Math.floor(rnd() * 95) : r < 0.7 ? Math.floor(rnd() * 0x3000) : 0x10000 + Math.floor(rnd() * 0x20000);
      if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41;
      s += String.fromCodePoint(cp);
    }
    out.push(s);
  }
  return out;
}

module.exports = { buildCorpus };
