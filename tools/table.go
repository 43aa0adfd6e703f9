package tools

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteTable writes r's tools as an aligned table for a person, in
// registration order: a header line, then one line per tool with its name,
// bracket name, timeout, concurrency, output budget and description; "-"
// stands for a setting left to the default.
func (r *Registry) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tBRACKET\tTIMEOUT\tCONCURRENCY\tMAX_OUTPUT\tDESCRIPTION")
	for _, name := range r.Names() {
		t, s, _ := r.Lookup(name)
		dash := func(v string, zero bool) string {
			if zero {
				return "-"
			}
			return v
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", name,
			dash(s.Bracket, s.Bracket == ""),
			dash(s.Timeout.String(), s.Timeout == 0),
			dash(fmt.Sprint(s.Concurrency), s.Concurrency == 0),
			dash(fmt.Sprint(s.MaxOutput), s.MaxOutput == 0),
			t.Description())
	}
	return tw.Flush()
}
