// Package policystore keeps the policy versions a learner publishes and
// actors load: one complete Hugging Face model folder per version under a
// store directory, each with a manifest of its files' sizes and SHA-256
// hashes, and a `latest` file naming the newest one.
//
//	STORE/
//	  latest            "v000003\n": the newest published version
//	  .lock             the writer's flock; holds its pid
//	  v000001/          config.json, tokenizer files, model.safetensors,
//	  v000002/          onnx/model.onnx, anything the caller adds, and
//	  v000003/          manifest.json, written last
//	    quantized/      the quantized copy for actors, when published (QuantizedForm)
//	  .tmp-…            temporaries of a publish or prune in progress
//
// A version is written into a temporary directory, every file and directory
// is fsynced, the directory is renamed into place and only then `latest` is
// replaced (write, fsync, rename, fsync). A process killed at any point
// leaves `latest` absent (nothing was ever published) or naming a complete
// version whose manifest matches its files.
//
// One writer per store (Open takes an exclusive flock on STORE/.lock and
// refuses a second writer, naming its pid); any number of readers in any
// process (OpenReadOnly takes no lock and never writes).
package policystore
