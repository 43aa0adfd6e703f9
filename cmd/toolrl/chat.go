package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/chat"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/tools"
)

func newChatCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Render conversations with a model's chat template",
		Long: `chat renders conversations with a model folder's own chat template, through
the same code a chat-format rollout uses.`,
	}
	cmd.AddCommand(newChatRenderCmd())
	return cmd
}

type chatRenderFlags struct {
	model, messages, tools, kwargs string
	addGenerationPrompt            bool
}

func newChatRenderCmd() *cobra.Command {
	var f chatRenderFlags
	cmd := &cobra.Command{
		Use:   "render --model DIR --messages FILE",
		Short: "Print the tokens and text toolrl feeds for a conversation",
		Long: `render renders a conversation with the model folder's chat template
(chat_template.jinja, else tokenizer_config.json's chat_template) and prints one
JSON object {"ids": [...], "text": "..."}: the text, and its tokens as toolrl
tokenizes it (tokenizer.json, without the post-processor: the template writes
its own BOS). It is what a chat-format rollout feeds the policy, and equals
transformers' apply_chat_template(messages, tools=..., tokenize=True).

DIR needs tokenizer.json and tokenizer_config.json (or chat_template.jinja),
no ONNX graph. --messages is a JSON array of OpenAI-style messages: {role,
content}, an assistant's tool_calls ([{type: function, id, function: {name,
arguments}}], arguments an object or a JSON string, passed to the template as
given), tool messages ({role: tool, content, name, tool_call_id}) and
reasoning_content; "-" reads stdin. --tools is a JSON array of OpenAI function
specs, or a toolrl tools registry file (YAML or JSON, as rollout --tools), whose
specs are rendered as a rollout renders them; schemas keep the key order
written.`,
		Example: `  toolrl chat render --model models/qwen3 --messages conv.json --add-generation-prompt
  toolrl chat render --model models/qwen3 --messages conv.json --tools tools.yaml \
      --add-generation-prompt --chat-template-kwargs '{"enable_thinking": false}'
  echo '[{"role": "user", "content": "hi"}]' | toolrl chat render --model DIR --messages -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.model == "" || f.messages == "" {
				return usageErrorf("chat render: --model DIR and --messages FILE are required")
			}
			kwargs, err := chat.ParseKwargs(f.kwargs)
			if err != nil {
				return usageErrorf("chat render: --chat-template-kwargs: %w", err)
			}
			return runChatRender(cmd, f, kwargs, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&f.model, "model", "", "model folder (tokenizer.json, tokenizer_config.json)")
	cmd.Flags().StringVar(&f.messages, "messages", "", `JSON array of OpenAI-style messages ("-": stdin)`)
	cmd.Flags().StringVar(&f.tools, "tools", "", "JSON array of OpenAI function specs, or a toolrl tools registry file")
	cmd.Flags().BoolVar(&f.addGenerationPrompt, "add-generation-prompt", false, "end with the opening of an assistant turn, as a rollout's prompt does")
	cmd.Flags().StringVar(&f.kwargs, "chat-template-kwargs", "", `JSON object of extra template variables, e.g. '{"enable_thinking": false}'`)
	return cmd
}

func runChatRender(cmd *cobra.Command, f chatRenderFlags, kwargs chat.Kwargs, out io.Writer) error {
	var messages []byte
	var err error
	if f.messages == "-" {
		messages, err = io.ReadAll(cmd.InOrStdin())
	} else {
		messages, err = os.ReadFile(f.messages)
	}
	if err != nil {
		return fmt.Errorf("chat render: read messages: %w", err)
	}
	if !json.Valid(messages) || !bytes.HasPrefix(bytes.TrimSpace(messages), []byte("[")) {
		return usageErrorf("chat render: %s: want a JSON array of messages", f.messages)
	}
	var specs json.RawMessage
	if f.tools != "" {
		if specs, err = tools.ReadSpecs(cmd.Context(), f.tools); errors.Is(err, tools.ErrSpecsNotJSON) {
			return usageErrorf("chat render: %w", err)
		} else if err != nil {
			return fmt.Errorf("chat render: %w", err)
		}
	}
	tmpl, err := chat.Load(f.model, specs != nil)
	if err != nil {
		return fmt.Errorf("chat render: %w", err)
	}
	tok, err := tokenizer.Load(filepath.Join(f.model, "tokenizer.json"))
	if err != nil {
		return fmt.Errorf("chat render: %w", err)
	}
	text, err := tmpl.Render(chat.Request{Messages: messages, Tools: specs, AddGenerationPrompt: f.addGenerationPrompt, Kwargs: kwargs})
	if err != nil {
		return fmt.Errorf("chat render: %s: %w", f.messages, err)
	}
	ids, err := tok.Encode(text, false)
	if err != nil {
		return fmt.Errorf("chat render: tokenize: %w", err)
	}
	if ids == nil {
		ids = []int32{}
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	return enc.Encode(struct {
		IDs  []int32 `json:"ids"`
		Text string  `json:"text"`
	}{ids, text})
}
