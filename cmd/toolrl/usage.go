package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agnivade/levenshtein"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// suggestionDistance is the largest edit distance at which a mistyped verb
// or flag name gets a "did you mean" (cobra's default for verbs).
const suggestionDistance = 2

// applyUsageConventions makes every usage error of the command tree under
// root a usageError (exit 2) that names the verb or flag at fault: an
// unknown verb or flag (with "did you mean …" when one is close), a bad flag
// value, a wrong number of arguments. It is the one place these rules live;
// newRootCmd applies it once to the whole tree.
func applyUsageConventions(root *cobra.Command) {
	root.SetFlagErrorFunc(flagError)
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		wrapArgs(c)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// wrapArgs makes c's argument check return usage errors. A command with
// verbs under it refuses an argument that is none of them (cobra checks
// only the root's, and a parent without RunE would print help and exit 0).
func wrapArgs(c *cobra.Command) {
	check := c.Args
	if c.HasSubCommands() {
		c.SuggestionsMinimumDistance = suggestionDistance
		if !c.Runnable() {
			c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
		}
	}
	c.Args = func(cmd *cobra.Command, args []string) error {
		if cmd.HasSubCommands() && len(args) > 0 && (check == nil || check(cmd, args) != nil) {
			return unknownVerb(cmd, args[0])
		}
		if check == nil {
			return nil
		}
		err := check(cmd, args)
		var ue usageError
		if err == nil || errors.As(err, &ue) {
			return err
		}
		return usageErrorf("%s%v (see %s --help)", verbPrefix(cmd), err, cmd.CommandPath())
	}
}

// unknownVerb is the usage error for an argument of cmd that names none of
// its verbs.
func unknownVerb(cmd *cobra.Command, arg string) error {
	msg := fmt.Sprintf("%sunknown verb %q", verbPrefix(cmd), arg)
	if s := cmd.SuggestionsFor(arg); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	var verbs []string
	for _, sub := range cmd.Commands() {
		if sub.IsAvailableCommand() {
			verbs = append(verbs, sub.Name())
		}
	}
	return usageErrorf("%s (verbs: %s; see %s --help)", msg, strings.Join(verbs, ", "), cmd.CommandPath())
}

// flagError is the FlagErrorFunc of every command: cobra calls it when
// parsing cmd's flags fails.
func flagError(cmd *cobra.Command, err error) error {
	// An unknown flag after an unknown verb (toolrl rollot --model m) is the
	// verb's fault: pflag stops at the flag, so the verb is in Args.
	if cmd.HasSubCommands() {
		if args := cmd.Flags().Args(); len(args) > 0 {
			return unknownVerb(cmd, args[0])
		}
	}
	var notExist *pflag.NotExistError
	if errors.As(err, &notExist) && notExist.GetSpecifiedShortnames() == "" {
		name := notExist.GetSpecifiedName()
		msg := fmt.Sprintf("%sunknown flag --%s", verbPrefix(cmd), name)
		if s := suggestFlags(cmd.Flags(), name); len(s) > 0 {
			msg += "; did you mean --" + strings.Join(s, " or --") + "?"
		} else if s := cmd.SuggestionsFor(name); len(s) > 0 {
			// toolrl --verison: a verb typed as a flag.
			msg += "; did you mean the verb " + strings.Join(s, " or ") + "?"
		}
		return usageErrorf("%s (see %s --help)", msg, cmd.CommandPath())
	}
	return usageErrorf("%s%v (see %s --help)", verbPrefix(cmd), err, cmd.CommandPath())
}

// suggestFlags returns the visible flags of fs whose names are within
// suggestionDistance edits of name (case-insensitively) or start with it,
// closest first.
func suggestFlags(fs *pflag.FlagSet, name string) []string {
	type candidate struct {
		name string
		d    int
	}
	var found []candidate
	typed := strings.ToLower(name)
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		d := levenshtein.ComputeDistance(typed, strings.ToLower(f.Name))
		if d <= suggestionDistance || (len(typed) >= 2 && strings.HasPrefix(f.Name, typed)) {
			found = append(found, candidate{f.Name, d})
		}
	})
	slices.SortFunc(found, func(a, b candidate) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	names := make([]string, 0, 3)
	for _, c := range found[:min(len(found), 3)] {
		names = append(names, c.name)
	}
	return names
}

// verbPrefix is "VERB: " naming cmd without the program name ("tools
// parse: "), or "" for the root (run prints "toolrl: " before every error).
func verbPrefix(cmd *cobra.Command) string {
	if !cmd.HasParent() {
		return ""
	}
	return strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ") + ": "
}
