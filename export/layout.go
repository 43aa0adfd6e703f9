package export

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// rewardColumnPrefix starts the name of each reward part column.
const rewardColumnPrefix = "reward_"

// layout is the Go row type of one Parquet file: the static row struct R with
// one optional DOUBLE column per reward part inserted after "reward". Parquet
// fixes its columns per file, and Hugging Face datasets cannot load Arrow map
// columns (huggingface/datasets#5612), so parts become flat columns, built
// here with reflect.StructOf.
type layout struct {
	static    reflect.Type
	row       reflect.Type // the dynamic struct
	schema    *parquet.Schema
	parts     []string
	partIndex map[string]int // part name -> index into parts
	staticPos []int          // row field index of static field i
	partPos   int            // row field index of parts[0]
}

// renames maps a column of static (v3's name) to the name a file written
// before v3 gives it (oldColumns); nil for a v3 file and for writing.
func newLayout(static reflect.Type, parts []string, renames map[string]string) (*layout, error) {
	l := &layout{static: static, parts: parts, partIndex: make(map[string]int, len(parts))}
	columns := make(map[string]bool, static.NumField())
	insertAt := -1
	for i := 0; i < static.NumField(); i++ {
		name := columnName(static.Field(i), renames)
		columns[name] = true
		if name == "reward" {
			insertAt = i + 1
		}
	}
	if insertAt < 0 {
		return nil, fmt.Errorf("row type %s has no reward column", static)
	}
	fields := make([]reflect.StructField, 0, static.NumField()+len(parts))
	for i := 0; i < static.NumField(); i++ {
		if i == insertAt {
			l.partPos = len(fields)
			for j, part := range parts {
				if err := checkPartName(part); err != nil {
					return nil, err
				}
				if columns[rewardColumnPrefix+part] {
					return nil, fmt.Errorf("reward part %q: column %s%s already exists", part, rewardColumnPrefix, part)
				}
				if _, dup := l.partIndex[part]; dup {
					return nil, fmt.Errorf("reward part %q listed twice", part)
				}
				l.partIndex[part] = j
				fields = append(fields, reflect.StructField{
					Name: fmt.Sprintf("RewardPart%d", j),
					Type: reflect.TypeFor[*float64](),
					Tag:  reflect.StructTag(fmt.Sprintf(`parquet:"%s%s,optional"`, rewardColumnPrefix, part)),
				})
			}
		}
		f := static.Field(i)
		tag := f.Tag
		if old, ok := renames[columnName(f, nil)]; ok {
			tag = reflect.StructTag(strings.Replace(string(tag), `parquet:"`+columnName(f, nil), `parquet:"`+old, 1))
		}
		l.staticPos = append(l.staticPos, len(fields))
		fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: tag})
	}
	l.row = reflect.StructOf(fields)
	l.schema = parquet.SchemaOf(reflect.New(l.row).Interface())
	return l, nil
}

// columnName is the Parquet column name of a struct field, renamed by
// renames (see newLayout).
func columnName(f reflect.StructField, renames map[string]string) string {
	name, _, _ := strings.Cut(f.Tag.Get("parquet"), ",")
	if name == "" {
		name = f.Name
	}
	if old, ok := renames[name]; ok {
		return old
	}
	return name
}

// oldColumns are the names files written before schema v3 give the columns
// v3 renamed (both kinds: v2's Parquet files already named the token ids
// input_ids and the behaviour logprobs old_logprobs).
var oldColumns = map[string]string{"response_mask": "loss_mask", "rollout_log_probs": "old_logprobs", "ref_log_prob": "ref_logprobs"}

// OldColumnName returns the name files written before schema v3 give a
// column (the name itself when v3 did not rename it).
func OldColumnName(column string) string {
	if old, ok := oldColumns[column]; ok {
		return old
	}
	return column
}

// columnRenames returns oldColumns for a file laid out before v3 (it has a
// loss_mask column and no response_mask), else nil. The columns, not the
// file's toolrl.schema, decide: files rewritten by other tools lose it.
func columnRenames(schema *parquet.Schema) map[string]string {
	var old, v3 bool
	for _, f := range schema.Fields() {
		switch f.Name() {
		case "loss_mask":
			old = true
		case "response_mask":
			v3 = true
		}
	}
	if old && !v3 {
		return oldColumns
	}
	return nil
}

// checkPartName accepts letters, digits, '_' and '-', so that reward_<part>
// is a column name every reader and query language takes as it is.
func checkPartName(part string) error {
	if part == "" {
		return fmt.Errorf("reward part name is empty")
	}
	for _, r := range part {
		if !(r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return fmt.Errorf("reward part %q: only letters, digits, '_' and '-' can name a parquet column", part)
		}
	}
	return nil
}

// encode fills a new row value from a static row and the reward parts, and
// returns a pointer to it. Every part must have a column.
func (l *layout) encode(static reflect.Value, parts map[string]float64) (any, error) {
	row := reflect.New(l.row).Elem()
	for i, pos := range l.staticPos {
		row.Field(pos).Set(static.Field(i))
	}
	if len(parts) > 0 {
		values := make([]float64, len(l.parts))
		for name, v := range parts {
			j, ok := l.partIndex[name]
			if !ok {
				return nil, fmt.Errorf("%w: %q (columns: %s)", ErrUnknownRewardPart, name, strings.Join(l.parts, ", "))
			}
			values[j] = v
			row.Field(l.partPos + j).Set(reflect.ValueOf(&values[j]))
		}
	}
	return row.Addr().Interface(), nil
}

// decode splits a row value (a pointer to l.row) into the static row (written
// to static, a settable R) and its reward parts (nil when every part is null).
func (l *layout) decode(row reflect.Value, static reflect.Value) map[string]float64 {
	row = row.Elem()
	for i, pos := range l.staticPos {
		static.Field(i).Set(row.Field(pos))
	}
	var parts map[string]float64
	for j, name := range l.parts {
		if p := row.Field(l.partPos + j); !p.IsNil() {
			if parts == nil {
				parts = make(map[string]float64, len(l.parts))
			}
			parts[name] = *(p.Interface().(*float64))
		}
	}
	return parts
}

// partsOfFile finds the reward part columns of a file schema for row type
// static: top-level DOUBLE columns named reward_<part> that are not static
// columns. It also checks that every static column is there, except the
// addedColumns of later schema versions (read as null when absent).
func partsOfFile(schema *parquet.Schema, static reflect.Type) ([]string, error) {
	renames := columnRenames(schema)
	columns := make(map[string]bool, static.NumField())
	for i := 0; i < static.NumField(); i++ {
		columns[columnName(static.Field(i), renames)] = true
	}
	present := make(map[string]bool)
	var parts []string
	for _, f := range schema.Fields() {
		name := f.Name()
		present[name] = true
		if columns[name] || !strings.HasPrefix(name, rewardColumnPrefix) {
			continue
		}
		if !f.Leaf() || f.Type().Kind() != parquet.Double {
			return nil, fmt.Errorf("column %s: a reward part column must be a DOUBLE, got %s", name, f.Type())
		}
		parts = append(parts, strings.TrimPrefix(name, rewardColumnPrefix))
	}
	var missing []string
	for name := range columns {
		if !present[name] && !addedColumns[name] {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("missing columns %s", strings.Join(missing, ", "))
	}
	return parts, nil
}
