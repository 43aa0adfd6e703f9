// Package tokenizer loads Hugging Face tokenizer.json files and encodes and
// decodes text with them in pure Go, producing the same ids and the same text as
// the reference implementation (the Rust `tokenizers` crate, as shipped in the
// npm package `tokenizers`).
//
// Supported components (anything else is rejected by Load/Parse with an error
// that names the component, never silently mis-tokenized):
//
//   - model: BPE (byte-level or not, with ignore_merges, byte_fallback,
//     unk_token/fuse_unk, continuing_subword_prefix, end_of_word_suffix)
//   - normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Replace, Prepend, Append,
//     Strip, StripAccents, Sequence
//   - pre-tokenizers: ByteLevel, Split (string or regex; every split behaviour),
//     Digits, Metaspace, Whitespace, WhitespaceSplit, Sequence
//   - post-processors: TemplateProcessing, ByteLevel, RobertaProcessing,
//     BertProcessing, Sequence
//   - decoders: ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, Sequence
//   - added tokens (special or not) with lstrip, rstrip, single_word and
//     normalized, matched before pre-tokenization.
//
// The Split pre-tokenizer's regex runs on a hand-written scanner for the GPT-2,
// Llama-3 and Qwen2 patterns and on github.com/dlclark/regexp2 for any other
// pattern. A *Tokenizer is immutable after loading and safe for concurrent use.
package tokenizer
