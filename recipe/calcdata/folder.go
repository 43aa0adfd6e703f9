package calcdata

import (
	"encoding/json"

	"github.com/toolrl/toolrl/model/train"
)

// PromptFormat is prompt_format.json: how the orchestrator renders a prompt
// and which call syntax the policy writes.
type PromptFormat struct {
	Kind           string `json:"kind"`
	Template       string `json:"template"`
	ToolCallFormat string `json:"tool_call_format"`
}

// ToolsYAML is models/calc/tools.yaml: the calculator in the tools registry
// format, answering to the bracket name CALC.
const ToolsYAML = `# The calc policy's tools: it writes [CALC: <expression>] and the
# environment appends " = <result>" (tools.BracketInjection, loss mask 0).
defaults:
  timeout: 3s      # per call; the design's 3 s (also the calculator's own default)
  max_output: 64
tools:
  - type: calculator
    bracket: CALC
    concurrency: 32
    function:
      name: calculator
      description: Evaluates an arithmetic expression exactly (+ - * / % ^ and parentheses).
      parameters:
        type: object
        properties:
          expression:
            type: string
            description: the expression, e.g. 12 * (34 + 5)
        required: [expression]
        additionalProperties: false
    settings:
      max_length: 256
      max_exponent: 1024
      decimals: 6
`

// FolderFiles returns the calc policy's non-weight files for
// train.Model.WriteFolder: generation_config.json, tokenizer_config.json
// (bos = eos = pad = special, whose text is specialText), and the extra files
// prompt_format.json and tools.yaml.
func FolderFiles(tokenizerJSON []byte, special int, specialText string) (train.FolderFiles, error) {
	enc := func(v any) ([]byte, error) {
		b, err := json.MarshalIndent(v, "", "  ")
		return append(b, '\n'), err
	}
	gen, err := enc(map[string]any{
		"bos_token_id": special, "eos_token_id": special, "pad_token_id": special,
		"do_sample": true, "temperature": 1.0, "max_new_tokens": 64,
	})
	if err != nil {
		return train.FolderFiles{}, err
	}
	tc, err := enc(map[string]any{
		"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
		"bos_token": specialText, "eos_token": specialText, "pad_token": specialText, "unk_token": nil,
		"add_bos_token": true, "add_eos_token": false, "clean_up_tokenization_spaces": false,
	})
	if err != nil {
		return train.FolderFiles{}, err
	}
	pf, err := enc(PromptFormat{Kind: "plain", Template: Template, ToolCallFormat: "bracket"})
	if err != nil {
		return train.FolderFiles{}, err
	}
	return train.FolderFiles{
		TokenizerJSON: tokenizerJSON, TokenizerConfig: tc, GenerationConfig: gen,
		Extra: map[string][]byte{"prompt_format.json": pf, "tools.yaml": []byte(ToolsYAML)},
	}, nil
}
