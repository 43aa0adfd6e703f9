package setting

import (
	"fmt"
	"strings"
)

// Markdown renders spec's declarations as a Markdown table: key (under
// prefix, e.g. "rollout."), flag, type, default and usage. It is how the
// settings reference (docs/settings.md) is written, so the page cannot
// drift from the declarations.
func Markdown(spec any, prefix string) string {
	var b strings.Builder
	b.WriteString("| key | flag | type | default | what it sets |\n|---|---|---|---|---|\n")
	for _, f := range Fields(spec) {
		flag, def := "", "—"
		if f.Flag != "" {
			flag = "`--" + f.Flag + "`"
		}
		if f.Default != "" {
			def = "`" + f.Default + "`"
		}
		fmt.Fprintf(&b, "| `%s%s` | %s | %s | %s | %s |\n", prefix, f.Key, flag, f.Type, def, strings.ReplaceAll(f.Usage, "|", "\\|"))
	}
	return b.String()
}
