package export

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/toolrl/toolrl/traj"
)

// Format is a file format export reads and writes.
type Format int

// The formats, chosen from the file extension by FormatOf.
const (
	// JSONL is one JSON record per line (".jsonl").
	JSONL Format = iota + 1
	// JSONLGzip is JSONL in a gzip stream (".jsonl.gz").
	JSONLGzip
	// Parquet is an Apache Parquet file (".parquet").
	Parquet
)

// String returns the format's usual name.
func (f Format) String() string {
	switch f {
	case JSONL:
		return "jsonl"
	case JSONLGzip:
		return "jsonl.gz"
	case Parquet:
		return "parquet"
	}
	return fmt.Sprintf("Format(%d)", int(f))
}

// ErrUnknownFormat is returned for a path whose extension is none of .jsonl,
// .jsonl.gz or .parquet.
var ErrUnknownFormat = errors.New("unknown file format: want .jsonl, .jsonl.gz or .parquet")

// FormatOf returns the format that a path's extension names (case-insensitive).
func FormatOf(path string) (Format, error) {
	lower := strings.ToLower(path)
	switch {
	case strings.HasSuffix(lower, ".jsonl.gz"):
		return JSONLGzip, nil
	case strings.HasSuffix(lower, ".jsonl"):
		return JSONL, nil
	case strings.HasSuffix(lower, ".parquet"):
		return Parquet, nil
	}
	return 0, fmt.Errorf("%s: %w", path, ErrUnknownFormat)
}

// Kind is what a file holds.
type Kind int

// The kinds of records a file can hold.
const (
	// Trajectories are traj.Trajectory records (schema traj.TrajectorySchema,
	// or an older version in files written before v3).
	// A JSONL file of traj.Group lines also has this kind: its readers yield
	// the groups' trajectories in order.
	Trajectories Kind = iota + 1
	// Advantages are traj.AdvantageRecord records (schema traj.AdvantageSchema,
	// or an older version in files written before v3).
	Advantages
)

// String returns "trajectories" or "advantages".
func (k Kind) String() string {
	switch k {
	case Trajectories:
		return "trajectories"
	case Advantages:
		return "advantages"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Schema returns the current schema version of the kind's records, the one
// writers write.
func (k Kind) Schema() string {
	if k == Advantages {
		return traj.AdvantageSchema
	}
	return traj.TrajectorySchema
}

// kindOfSchema is the kind of a schema version, current or older.
func kindOfSchema(schema string) (Kind, bool) {
	switch schema {
	case traj.TrajectorySchema, traj.TrajectorySchemaV2, traj.TrajectorySchemaV1:
		return Trajectories, true
	case traj.AdvantageSchema, traj.AdvantageSchemaV2, traj.AdvantageSchemaV1:
		return Advantages, true
	}
	return 0, false
}

// knownSchemas lists the schema versions readers take, for error messages.
var knownSchemas = fmt.Sprintf("%q or %q (or, read only, %q, %q, %q or %q)", traj.TrajectorySchema, traj.AdvantageSchema,
	traj.TrajectorySchemaV2, traj.AdvantageSchemaV2, traj.TrajectorySchemaV1, traj.AdvantageSchemaV1)

// ErrNoRecords is returned by DetectKind for a JSONL file without records:
// such a file has no kind.
var ErrNoRecords = errors.New("no records, so no kind")

// DetectKind reads the schema of a file: the MetaSchema key-value metadata of
// a Parquet file, or the "schema" field of the first non-blank JSONL line. An
// empty JSONL file has no kind and gives ErrNoRecords.
func DetectKind(path string) (Kind, error) {
	format, err := FormatOf(path)
	if err != nil {
		return 0, err
	}
	if format == Parquet {
		f, closer, err := openParquetFile(path)
		if err != nil {
			return 0, err
		}
		defer closer.Close()
		kind, err := parquetKind(f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", path, err)
		}
		return kind, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("detect kind: %w", err)
	}
	defer file.Close()
	var r io.Reader = file
	if format == JSONLGzip {
		gz, err := gzip.NewReader(file)
		if err != nil {
			return 0, fmt.Errorf("%s: gzip: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	br := bufio.NewReaderSize(r, 1<<16)
	for line := 1; ; line++ {
		data, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(data)) > 0 {
			var head struct {
				Schema string `json:"schema"`
			}
			if jerr := json.Unmarshal(data, &head); jerr != nil {
				return 0, fmt.Errorf("%s line %d: %w", path, line, jerr)
			}
			kind, ok := kindOfSchema(head.Schema)
			if !ok {
				return 0, fmt.Errorf("%s line %d: schema is %q, want %s", path, line, head.Schema, knownSchemas)
			}
			return kind, nil
		}
		if err == io.EOF {
			return 0, fmt.Errorf("%s: %w", path, ErrNoRecords)
		}
		if err != nil {
			return 0, fmt.Errorf("%s line %d: %w", path, line, err)
		}
	}
}

// parquetKind is the kind a Parquet file's MetaSchema metadata names. A file
// without it (one that DuckDB, pandas or datasets rewrote after filtering
// ours, dropping our metadata) gets the kind its columns say: trajectory_id
// and advantages make advantage records, id and finish_reason trajectories
// (columns of every schema version, so that v1 files are recognised too).
func parquetKind(f *parquet.File) (Kind, error) {
	kind, _, err := parquetSchema(f)
	return kind, err
}

// parquetSchema is parquetKind plus the schema version of the file's records:
// the MetaSchema metadata, or without it the kind's current version (a file
// rewritten from v1 data then reads as v2 without temperature, which is
// valid).
func parquetSchema(f *parquet.File) (Kind, string, error) {
	if schema, ok := f.Lookup(MetaSchema); ok {
		kind, known := kindOfSchema(schema)
		if !known {
			return 0, "", fmt.Errorf("key-value metadata %s is %q, want %s", MetaSchema, schema, knownSchemas)
		}
		return kind, schema, nil
	}
	has := func(name string) bool { return fieldNamed(f.Schema().Fields(), name) }
	switch {
	case has("trajectory_id") && has("advantages") && has("input_ids"):
		return Advantages, Advantages.Schema(), nil
	case has("id") && has("finish_reason") && has("input_ids"):
		return Trajectories, Trajectories.Schema(), nil
	}
	return 0, "", fmt.Errorf("no %s key-value metadata, and the columns are not those of toolrl trajectories or advantage records", MetaSchema)
}

func fieldNamed(fields []parquet.Field, name string) bool {
	for _, f := range fields {
		if f.Name() == name {
			return true
		}
	}
	return false
}

// openParquetFile opens path as a Parquet file; the closer closes the OS file.
func openParquetFile(path string) (*parquet.File, io.Closer, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open parquet: %w", err)
	}
	info, err := file.Stat()
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("open parquet: %w", err)
	}
	f, err := parquet.OpenFile(file, info.Size())
	if err != nil {
		file.Close()
		return nil, nil, fmt.Errorf("%s: not a readable parquet file: %w", path, err)
	}
	return f, file, nil
}
