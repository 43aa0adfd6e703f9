// Package llama builds decoder-only Llama-family models (Llama and Llama 3.x
// rope scaling, Mistral, Qwen2, Qwen3, SmolLM shapes; see Family and RoPE) as
// ONNX graphs in optimum's text-generation-with-past layout, writes
// complete Hugging Face model folders around them, and runs the same
// architecture in pure Go as a reference.
//
// Weights are keyed by Hugging Face tensor names and stored row-major in
// PyTorch Linear layout ([out, in]); see Weights. The math follows Hugging
// Face transformers exactly: RMSNorm x*rsqrt(mean(x^2)+eps)*w, rotary
// embeddings with rotate_half (non-interleaved halves), grouped-query
// attention by repeat_kv, and a SwiGLU MLP down(silu(gate(x))*up(x)).
//
// The graph's inputs are input_ids [B,S], attention_mask [B,P+S] and
// position_ids [B,S] (int64) plus past_key_values.{i}.key|value [B,kvH,P,D]
// (float32, P may be 0); its outputs are logits [B,S,V] and
// present.{i}.key|value [B,kvH,P+S,D]. Padding (left or anywhere) is taken
// from attention_mask; masked keys get a large finite negative bias
// (MaskBias) rather than -inf, so fully masked rows stay finite.
package llama
