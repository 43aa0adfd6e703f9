package tokenizer

import "errors"

// ErrHFDisabled is returned by LoadHF in builds without the hftokenizers
// build tag.
var ErrHFDisabled = errors.New("tokenizer: the Rust backend (daulet/tokenizers) is not built in: rebuild with -tags hftokenizers and libtokenizers.a (see docs/tokenizer.md)")
