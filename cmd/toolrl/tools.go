package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/orchestrator"
	"github.com/toolrl/toolrl/tokenizer"
	"github.com/toolrl/toolrl/tools"
	"github.com/toolrl/toolrl/traj"
)

func newToolsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "tools",
		Short: "List, call or parse the tools of a registry file",
		Long: `tools works with a tool registry file (YAML or JSON): the tools a rollout may
call, in the OpenAI function format, with per-tool timeout, concurrency, output
budget and bracket name. See docs/tools.md for the format.`,
		Example: `  toolrl tools list --tools tools/testdata/calc.yaml
  toolrl tools call --tools tools/testdata/calc.yaml calculator '{"expression": "12 * 34"}'
  toolrl tools parse --tools tools/testdata/calc.yaml --exec 'So [CALC: 12 * 34]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageErrorf("tools: say list, call or parse (see toolrl tools --help)")
		},
	}
	cmd.AddCommand(newToolsListCmd(), newToolsCallCmd(), newToolsParseCmd())
	return cmd
}

// loadTools reads the registry named by --tools; the caller closes it.
func loadTools(ctx context.Context, path string) (*tools.Registry, error) {
	if path == "" {
		return nil, usageErrorf("--tools FILE is required")
	}
	return tools.LoadRegistry(ctx, path)
}

func newToolsListCmd() *cobra.Command {
	var path string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list --tools FILE",
		Short: "List the tools of a registry",
		Long: `list prints one line per tool: name, bracket name, timeout, concurrency, output
budget and description. With --json it prints the OpenAI tool list that chat
templates take.`,
		Example: `  toolrl tools list --tools tools/testdata/calc.yaml
  toolrl tools list --tools tools/testdata/calc.yaml --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			reg, err := loadTools(ctx, path)
			if err != nil {
				return err
			}
			defer reg.Close()
			return listTools(reg, asJSON, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&path, "tools", "", "tool registry file (YAML or JSON)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the OpenAI tool list as JSON")
	return cmd
}

func listTools(reg *tools.Registry, asJSON bool, out io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(reg.Specs())
	}
	return reg.WriteTable(out)
}

type toolsCallFlags struct {
	path      string
	timeout   time.Duration
	maxOutput int
	asJSON    bool
}

func newToolsCallCmd() *cobra.Command {
	var f toolsCallFlags
	cmd := &cobra.Command{
		Use:   "call --tools FILE NAME 'JSON-ARGS'",
		Short: "Run one tool call and print its result",
		Long: `call validates the JSON arguments against the tool's schema, runs the call
through the executor (timeout, output normalisation and truncation) and prints
the result's content. A failed call prints "error: <class>: <detail>" on
stderr and exits 1; the class is one of bad_json, unknown_tool, schema,
invalid_args, tool_error, timeout, panic, canceled. With --json the whole
result record (as a trajectory stores it) is printed instead, on stdout.`,
		Example: `  toolrl tools call --tools tools/testdata/calc.yaml calculator '{"expression": "2^100"}'
  toolrl tools call --tools tools.yaml python '{"code": "print(6*7)"}' --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usageErrorf("tools call: want NAME and 'JSON-ARGS', got %d arguments", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := signalContext(cmd)
			defer cancel()
			reg, err := loadTools(ctx, f.path)
			if err != nil {
				return err
			}
			defer reg.Close()
			return callTool(ctx, reg, args[0], args[1], f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().StringVar(&f.path, "tools", "", "tool registry file (YAML or JSON)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", 0, "timeout of a tool whose settings give none (default 10s)")
	cmd.Flags().IntVar(&f.maxOutput, "max-output", 0, "output budget in tokens of a tool whose settings give none (default 512)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the result record as JSON")
	return cmd
}

func callTool(ctx context.Context, reg *tools.Registry, name, rawArgs string, f toolsCallFlags, out, errOut io.Writer) error {
	ex := tools.NewExecutor(reg, tools.ExecutorOptions{DefaultTimeout: f.timeout, MaxOutputTokens: f.maxOutput})
	res := ex.ExecuteText(ctx, name, rawArgs)
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(res); err != nil {
			return err
		}
	} else if res.OK {
		fmt.Fprint(out, res.Content)
		if !strings.HasSuffix(res.Content, "\n") {
			fmt.Fprintln(out)
		}
	}
	if !res.OK {
		return exitError{code: exitFailure, err: fmt.Errorf("call %s: %s: %s", name, res.ErrorClass, res.Error)}
	}
	return nil
}

func newToolsParseCmd() *cobra.Command {
	var path, model, form string
	var exec bool
	cmd := &cobra.Command{
		Use:   "parse --tools FILE (--model DIR | --format bracket|hermes|llama3_json|mistral) [--exec] TEXT",
		Short: "Find the tool calls in a model text, as a rollout would",
		Long: `parse feeds TEXT to the streaming call parser of a call format and prints
each call it finds (name, arguments, error class) as JSON, one per line. With
--exec it also runs each valid call and prints the text a rollout would inject
after it.

The call format comes from --model DIR, decided as a rollout of that model
folder decides it (its prompt_format.json, else the calls its chat template
renders; the injected text is then that format's), or from --format. One of
them is required: there is no default format.`,
		Example: `  toolrl tools parse --tools tools/testdata/calc.yaml --model models/calc --exec 'So [CALC: 12 * 34]'
  toolrl tools parse --tools tools.yaml --format hermes '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call>'
  toolrl tools parse --tools tools/testdata/calc.yaml --format llama3_json '{"name": "calculator", "parameters": {"expression": "2^10"}}'
  toolrl tools parse --tools tools/testdata/calc.yaml --format mistral '[TOOL_CALLS] [{"name": "calculator", "arguments": {"expression": "1+1"}}]'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if model == "" && form == "" {
				return usageErrorf("tools parse: say which call format to parse: --model DIR (the format a rollout of that model folder uses) or --format %s", strings.Join(tools.Forms(), "|"))
			}
			if form != "" {
				if _, err := tools.NewParser(form, nil, tools.ParserOptions{}); err != nil {
					return usageErrorf("tools parse: --format: %v", err)
				}
			}
			ctx, cancel := signalContext(cmd)
			defer cancel()
			reg, err := loadTools(ctx, path)
			if err != nil {
				return err
			}
			defer reg.Close()
			var format orchestrator.Format
			if model != "" {
				tok, err := tokenizer.Load(filepath.Join(model, "tokenizer.json"))
				if err != nil {
					return fmt.Errorf("tools parse: --model %s: %w", model, err)
				}
				if format, err = orchestrator.OpenFormat(model, tok, orchestrator.FormatOptions{ToolCallFormat: form, Tools: reg.Specs()}); err != nil {
					return fmt.Errorf("tools parse: --model %s: %w", model, err)
				}
				form = format.CallForm()
			}
			p, err := tools.NewParser(form, reg, tools.ParserOptions{})
			if err != nil {
				return usageError{err}
			}
			return parseTools(ctx, reg, p, form, format, args[0], exec, cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&path, "tools", "", "tool registry file (YAML or JSON)")
	cmd.Flags().StringVar(&model, "model", "", "model folder whose call format (and injected text) a rollout would use")
	cmd.Flags().StringVar(&form, "format", "", "call format: bracket ([CALC: 1+2]), hermes (<tool_call>...</tool_call>), llama3_json (the text is one {\"name\": ..., \"parameters\": ...} turn) or mistral ([TOOL_CALLS] [...])")
	cmd.Flags().BoolVar(&exec, "exec", false, "run each valid call and print the injected text")
	return cmd
}

// parseTools prints the calls p finds in text, one JSON line each. With
// exec it runs them and prints what is injected after each: format's
// injection when a model folder gave the format, else the call form's own.
func parseTools(ctx context.Context, reg *tools.Registry, p tools.Parser, form string, format orchestrator.Format, text string, exec bool, out io.Writer) error {
	var ex *tools.Executor
	if exec {
		ex = tools.NewExecutor(reg, tools.ExecutorOptions{})
	}
	inject := func(r traj.ToolResult) (string, error) { return tools.FormInjection(form, r), nil }
	if format != nil {
		inject = func(r traj.ToolResult) (string, error) {
			turn, err := format.Injection([]traj.ToolResult{r})
			return turn.Text, err
		}
	}
	enc := json.NewEncoder(out)
	if err := tools.ParseText(ctx, p, text, ex, inject, func(c tools.FoundCall) error { return enc.Encode(c) }); err != nil {
		return fmt.Errorf("tools parse: %w", err)
	}
	return nil
}
