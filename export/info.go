package export

import (
	"fmt"
	"os"
	"reflect"
	"strings"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"
)

// Column is one top-level column of a Parquet file.
type Column struct {
	Name string `json:"name"`
	// Type is the column's type in a short notation: int64, float32, string,
	// bool, list<int32>, struct<name: type, ...>, with "?" after a nullable
	// (optional) column or field.
	Type string `json:"type"`
}

// FileInfo describes a dataset file.
type FileInfo struct {
	Path   string
	Format Format
	Kind   Kind
	Size   int64 // bytes on disk
	// The rest is known for Parquet only.
	Rows      int64
	RowGroups int
	CreatedBy string
	Metadata  map[string]string
	Columns   []Column
}

// Stat reads a file's format, kind and, for Parquet, its footer: row and
// row-group counts, key-value metadata and columns. It does not read records.
func Stat(path string) (FileInfo, error) {
	info := FileInfo{Path: path}
	var err error
	if info.Format, err = FormatOf(path); err != nil {
		return info, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return info, fmt.Errorf("stat: %w", err)
	}
	info.Size = st.Size()
	if info.Kind, err = DetectKind(path); err != nil {
		return info, err
	}
	if info.Format != Parquet {
		return info, nil
	}
	f, closer, err := openParquetFile(path)
	if err != nil {
		return info, err
	}
	defer closer.Close()
	info.Rows = f.NumRows()
	info.RowGroups = len(f.RowGroups())
	info.CreatedBy = f.Metadata().CreatedBy
	info.Metadata = make(map[string]string)
	for _, kv := range f.Metadata().KeyValueMetadata {
		info.Metadata[kv.Key] = kv.Value
	}
	info.Columns = columnsOf(f.Schema())
	return info, nil
}

// ParquetColumns returns the columns a Parquet file of kind with the given
// reward parts has (what a JSONL file would become).
func ParquetColumns(kind Kind, parts []string) ([]Column, error) {
	var static reflect.Type
	if kind == Advantages {
		static = reflect.TypeFor[advantageRow]()
	} else {
		static = reflect.TypeFor[trajectoryRow]()
	}
	l, err := newLayout(static, parts, nil)
	if err != nil {
		return nil, err
	}
	return columnsOf(l.schema), nil
}

func columnsOf(schema *parquet.Schema) []Column {
	var cols []Column
	for _, f := range schema.Fields() {
		cols = append(cols, Column{Name: f.Name(), Type: typeOf(f)})
	}
	return cols
}

// typeOf renders a Parquet node in the short notation of Column.Type.
func typeOf(n parquet.Node) string {
	nullable := ""
	if n.Optional() {
		nullable = "?"
	}
	if n.Leaf() {
		return leafType(n.Type()) + nullable
	}
	if lt := n.Type().LogicalType(); lt != nil && isList(lt.Value) {
		// LIST: group (LIST) { repeated group list { element } }
		if rep := n.Fields(); len(rep) == 1 && len(rep[0].Fields()) == 1 {
			return "list<" + typeOf(rep[0].Fields()[0]) + ">" + nullable
		}
	}
	fields := make([]string, 0, len(n.Fields()))
	for _, f := range n.Fields() {
		fields = append(fields, f.Name()+": "+typeOf(f))
	}
	return "struct<" + strings.Join(fields, ", ") + ">" + nullable
}

func isList(v format.LogicalTypeValue) bool {
	_, ok := v.(*format.ListType)
	return ok
}

func leafType(t parquet.Type) string {
	if lt := t.LogicalType(); lt != nil {
		switch v := lt.Value.(type) {
		case *format.StringType:
			return "string"
		case *format.IntType:
			if v.IsSigned {
				return fmt.Sprintf("int%d", v.BitWidth)
			}
			return fmt.Sprintf("uint%d", v.BitWidth)
		}
	}
	switch t.Kind() {
	case parquet.Boolean:
		return "bool"
	case parquet.Int32:
		return "int32"
	case parquet.Int64:
		return "int64"
	case parquet.Float:
		return "float32"
	case parquet.Double:
		return "float64"
	case parquet.ByteArray:
		return "bytes"
	}
	return strings.ToLower(t.String())
}
