package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// Writer writes records of one kind to one file. Write validates every record
// before it writes any of them; a rejected call writes nothing. Flush makes
// what was written so far durable where the format allows (see the
// implementations), and Close flushes, finishes the file and releases it.
// A Writer is not safe for concurrent use.
type Writer[T any] interface {
	Write(records ...T) error
	Flush() error
	Close() error
}

// Abort discards what w wrote, for a caller that fails before Close: the
// writers Create* return write a temporary file (unless appending) that
// Close renames into place, so after Abort the path holds what it held before
// (a plain .jsonl opened with Append keeps the lines written: Abort closes
// it). A writer without an Abort method is closed.
func Abort[T any](w Writer[T]) error {
	if a, ok := w.(interface{ Abort() error }); ok {
		return a.Abort()
	}
	return w.Close()
}

// Reader reads records of one kind from one file, in file order. Next returns
// io.EOF after the last record; any other error names the file and the line
// (JSONL) or row (Parquet, counted from 1) it came from. A Reader is not safe
// for concurrent use.
type Reader[T any] interface {
	Next() (T, error)
	Close() error
}

// Positioner is implemented by the readers Open* return: Position names the
// file and line (JSONL) or row (Parquet, from 1) of the record Next returned
// last, for error messages about that record.
type Positioner interface {
	Position() string
}

// TrajectoryWriter writes traj.Trajectory records.
type TrajectoryWriter = Writer[traj.Trajectory]

// TrajectoryReader reads traj.Trajectory records.
type TrajectoryReader = Reader[traj.Trajectory]

// AdvantageWriter writes traj.AdvantageRecord records.
type AdvantageWriter = Writer[traj.AdvantageRecord]

// AdvantageReader reads traj.AdvantageRecord records.
type AdvantageReader = Reader[traj.AdvantageRecord]

// DefaultRowsPerGroup is the Parquet row-group size when WriterOptions leaves
// it 0: small enough that a streaming reader holds one group in memory
// (~1024 sequences), large enough for zstd to compress well.
const DefaultRowsPerGroup = 1024

// Parquet key-value metadata keys that toolrl writes.
const (
	// MetaSchema holds the record schema version (traj.TrajectorySchema or
	// traj.AdvantageSchema).
	MetaSchema = "toolrl.schema"
	// MetaRewardParts holds the comma-separated reward part names that have a
	// reward_<part> column, in column order.
	MetaRewardParts = "toolrl.reward_parts"
)

// WriterOptions configures a writer. The zero value is ready to use.
type WriterOptions struct {
	// RowsPerGroup is the number of rows per Parquet row group; a row group
	// is also closed early by Flush. 0 means DefaultRowsPerGroup. JSONL
	// ignores it.
	RowsPerGroup int64
	// RewardParts names reward parts that get a reward_<part> column in
	// Parquet, on top of the parts found in the first row group. Parquet
	// fixes its columns when the first row group is written (the writer
	// holds those records until then, so do not modify their slices after
	// Write), and a later record with a part neither listed here nor seen in
	// the first row group is rejected (ErrUnknownRewardPart): list every part
	// the reward config can emit.
	// Part names are letters, digits, '_' and '-'. JSONL ignores it.
	RewardParts []string
	// Metadata is extra Parquet key-value metadata; keys starting with
	// "toolrl." are reserved. JSONL ignores it.
	Metadata map[string]string
	// Append appends to an existing .jsonl file instead of truncating it,
	// after cutting a partial last line (one a crash left without its
	// newline). Only plain .jsonl supports it.
	Append bool
}

// ErrUnknownRewardPart is returned by a Parquet writer for a record whose
// reward has a part that has no column (see WriterOptions.RewardParts).
var ErrUnknownRewardPart = errors.New("reward part has no column in this parquet file")

// CreateTrajectories returns a writer of trajectories into the file at path,
// in the format its extension names. The file is replaced on Close (Abort
// leaves it as it was), or appended to with WriterOptions.Append.
func CreateTrajectories(path string, opts WriterOptions) (TrajectoryWriter, error) {
	return create(path, opts, trajectoryCodec, trajectoryRows)
}

// OpenTrajectories opens a file of trajectories (or, for JSONL, of groups).
func OpenTrajectories(path string) (TrajectoryReader, error) {
	return open(path, trajectoryCodec, trajectoryRows)
}

// CreateAdvantages returns a writer of advantage records into the file at
// path, in the format its extension names; replaced on Close, as
// CreateTrajectories.
func CreateAdvantages(path string, opts WriterOptions) (AdvantageWriter, error) {
	return create(path, opts, advantageCodec, advantageRows)
}

// OpenAdvantages opens a file of advantage records.
func OpenAdvantages(path string) (AdvantageReader, error) {
	return open(path, advantageCodec, advantageRows)
}

func create[T, R any](path string, opts WriterOptions, c *codec[T], rows *rowCodec[T, R]) (Writer[T], error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	if opts.Append && format != JSONL {
		return nil, fmt.Errorf("create %s: Append needs a plain .jsonl file, not %s", path, format)
	}
	// Not return createParquet(...): a nil *parquetWriter in a Writer is a
	// non-nil interface, and a caller's deferred Close would panic on it.
	var w Writer[T]
	if format == Parquet {
		w, err = createParquet(path, opts, rows)
	} else {
		w, err = createJSONL(path, format, opts, c)
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

func open[T, R any](path string, c *codec[T], rows *rowCodec[T, R]) (Reader[T], error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	// A nil interface on error, not a nil *parquetReader (see create).
	var r Reader[T]
	if format == Parquet {
		r, err = openParquet(path, rows)
	} else {
		r, err = openJSONL(path, format, c)
	}
	if err != nil {
		return nil, err
	}
	return r, nil
}

// Copy reads every record of src and writes it to dst, in batches, and
// returns how many it copied. It closes neither.
func Copy[T any](dst Writer[T], src Reader[T]) (int64, error) {
	const batch = 256
	buf := make([]T, 0, batch)
	var n int64
	for {
		rec, err := src.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return n, err
		}
		buf = append(buf, rec)
		if len(buf) == batch {
			if err := dst.Write(buf...); err != nil {
				return n, err
			}
			n += int64(len(buf))
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		if err := dst.Write(buf...); err != nil {
			return n, err
		}
		n += int64(len(buf))
	}
	return n, nil
}

// codec is the JSON side of a record kind.
type codec[T any] struct {
	kind     Kind
	marshal  func(*T) ([]byte, error)
	validate func(*T) error
	// decode returns the records of one JSONL line (a group line holds several).
	decode func([]byte) ([]T, error)
}

var trajectoryCodec = &codec[traj.Trajectory]{
	kind:     Trajectories,
	marshal:  wire.EncodeTrajectory,
	validate: (*traj.Trajectory).Validate,
	decode:   decodeTrajectoryLine,
}

var advantageCodec = &codec[traj.AdvantageRecord]{
	kind:     Advantages,
	marshal:  wire.EncodeRecord,
	validate: (*traj.AdvantageRecord).Validate,
	decode: func(line []byte) ([]traj.AdvantageRecord, error) {
		r, err := wire.DecodeRecord(line)
		if err != nil {
			return nil, err
		}
		return []traj.AdvantageRecord{r}, nil
	},
}

// decodeTrajectoryLine decodes a trajectory line or, failing that, a group
// line; the error is the trajectory's when neither decodes.
func decodeTrajectoryLine(line []byte) ([]traj.Trajectory, error) {
	t, err := wire.DecodeTrajectory(line)
	if err == nil {
		return []traj.Trajectory{t}, nil
	}
	var probe struct {
		Trajectories json.RawMessage `json:"trajectories"`
	}
	if json.Unmarshal(line, &probe) != nil || probe.Trajectories == nil {
		return nil, err
	}
	g, gerr := wire.DecodeGroup(line)
	if gerr != nil {
		return nil, gerr
	}
	return g.Trajectories, nil
}
