package export

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// ColumnsAsParquet returns the file's columns: a Parquet file's own, or
// those a JSONL file would have as Parquet with the given reward parts.
func (info FileInfo) ColumnsAsParquet(parts []string) ([]Column, error) {
	if info.Format == Parquet {
		return info.Columns, nil
	}
	return ParquetColumns(info.Kind, parts)
}

// WriteText writes the file's facts and columns as toolrl inspect prints
// them, a JSONL file's columns as Parquet with the given reward parts.
func (info FileInfo) WriteText(w io.Writer, parts []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "file             %s (%s, %d bytes)\n", info.Path, info.Format, info.Size)
	fmt.Fprintf(&b, "schema           %s (%s)\n", info.Kind.Schema(), info.Kind)
	columns, err := info.ColumnsAsParquet(parts)
	if err != nil {
		return err
	}
	if info.Format == Parquet {
		fmt.Fprintf(&b, "parquet          %d rows in %d row groups, created by %s\n", info.Rows, info.RowGroups, info.CreatedBy)
		keys := make([]string, 0, len(info.Metadata))
		for k := range info.Metadata {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "  metadata       %s = %s\n", k, info.Metadata[k])
		}
		b.WriteString("columns\n")
	} else {
		b.WriteString("columns          (as Parquet)\n")
	}
	for _, c := range columns {
		fmt.Fprintf(&b, "  %-20s %s\n", c.Name, c.Type)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// FileReport is a file's facts, columns and summary as toolrl inspect
// --json prints them.
type FileReport struct {
	Path      string            `json:"path"`
	Format    string            `json:"format"`
	Schema    string            `json:"schema"`
	Bytes     int64             `json:"bytes"`
	Rows      int64             `json:"parquet_rows,omitempty"`
	RowGroups int               `json:"parquet_row_groups,omitempty"`
	CreatedBy string            `json:"parquet_created_by,omitempty"`
	Metadata  map[string]string `json:"parquet_metadata,omitempty"`
	// Columns are ColumnsAsParquet's, with the summary's reward parts.
	Columns []Column      `json:"columns"`
	Summary SummaryReport `json:"summary"`
}

// NewFileReport reports info and the summary of the file's records, its
// reward histogram in bins bins.
func NewFileReport(info FileInfo, summary *Summary, bins int) (FileReport, error) {
	columns, err := info.ColumnsAsParquet(summary.RewardParts())
	if err != nil {
		return FileReport{}, err
	}
	if len(columns) == 0 {
		columns = nil // no columns encode as null
	}
	return FileReport{Path: info.Path, Format: info.Format.String(), Schema: info.Kind.Schema(), Bytes: info.Size,
		Rows: info.Rows, RowGroups: info.RowGroups, CreatedBy: info.CreatedBy, Metadata: info.Metadata,
		Columns: columns, Summary: summary.Report(bins)}, nil
}
