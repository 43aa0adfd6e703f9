// Package safetensors reads and writes Hugging Face safetensors checkpoints:
// one file, or a directory sharded through model.safetensors.index.json.
//
// The format is an 8-byte little-endian header length, a JSON header that maps
// each tensor name to its dtype, shape and byte range, and the raw row-major,
// little-endian tensor data. This package converts F32, F16 and BF16 tensors
// to and from float32; other dtypes are listed but not converted.
//
// Readers use ReadAt on the open file, so a tensor is read only when asked
// for and a checkpoint larger than memory can be converted tensor by tensor.
package safetensors
