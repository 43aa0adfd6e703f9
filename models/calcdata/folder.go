package calcdata

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
  timeout: 2s
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

// WriteFolderFiles writes the calc policy's non-weight files into dir:
// prompt_format.json, tools.yaml, generation_config.json and
// tokenizer_config.json (bos = eos = pad = special, the tokenizer's
// SpecialToken text).
func WriteFolderFiles(dir string, special int, specialText string) error {
	files := map[string]any{
		"prompt_format.json": PromptFormat{Kind: "plain", Template: Template, ToolCallFormat: "bracket"},
		"generation_config.json": map[string]any{
			"bos_token_id": special, "eos_token_id": special, "pad_token_id": special,
			"do_sample": true, "temperature": 1.0, "max_new_tokens": 64,
		},
		"tokenizer_config.json": map[string]any{
			"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 256,
			"bos_token": specialText, "eos_token": specialText, "pad_token": specialText, "unk_token": nil,
			"add_bos_token": true, "add_eos_token": false, "clean_up_tokenization_spaces": false,
		},
	}
	for name, v := range files {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, '\n'), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tools.yaml"), []byte(ToolsYAML), 0o644); err != nil {
		return fmt.Errorf("write tools.yaml: %w", err)
	}
	return nil
}
