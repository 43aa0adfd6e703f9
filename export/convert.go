package export

import (
	"context"
	"slices"

	"github.com/toolrl/toolrl/traj"
)

// Input is what Convert reads: the records of one kind, from a dataset file
// (FileInput) or from elsewhere (a job's Redis stream, export/jobstream).
type Input struct {
	// Name names the input in messages: the file's path, the stream's key.
	Name string
	// Kind is the kind of the records; Convert opens them with the opener
	// of that kind.
	Kind Kind
	// Path is the dataset file, "" for an input that is not a file.
	Path string
	// Trajectories and Advantages open a reader of the records from the
	// first. Convert calls the one of Kind once, or, for Parquet output of
	// an input that is not a file, twice: a first pass finds the reward
	// parts.
	Trajectories func(context.Context) (Reader[traj.Trajectory], error)
	Advantages   func(context.Context) (Reader[traj.AdvantageRecord], error)
}

// FileInput is the Input of the dataset file at path, its kind read from
// the file (DetectKind).
func FileInput(path string) (Input, error) {
	kind, err := DetectKind(path)
	if err != nil {
		return Input{}, err
	}
	return Input{Name: path, Kind: kind, Path: path,
		Trajectories: func(context.Context) (Reader[traj.Trajectory], error) { return OpenTrajectories(path) },
		Advantages:   func(context.Context) (Reader[traj.AdvantageRecord], error) { return OpenAdvantages(path) },
	}, nil
}

// Convert copies in's records into a new file at to, in the format its
// extension names, and returns how many it copied. For Parquet it first
// finds every reward part, to give each a column: cheaply for a file
// (ScanRewardParts), with a first pass over the records otherwise; they
// are added to opts.RewardParts. The file at to is replaced only on
// success: on failure, or once ctx is done (it stops with ctx's error), a
// file there stays as it was.
func Convert(ctx context.Context, in Input, to string, opts WriterOptions) (int64, error) {
	if in.Kind == Trajectories {
		return convertRecords(ctx, in, to, opts, in.Trajectories, CreateTrajectories, func(t *traj.Trajectory) map[string]float64 { return t.Reward.Parts })
	}
	return convertRecords(ctx, in, to, opts, in.Advantages, CreateAdvantages, func(a *traj.AdvantageRecord) map[string]float64 { return a.Reward.Parts })
}

func convertRecords[T any](ctx context.Context, in Input, to string, opts WriterOptions,
	open func(context.Context) (Reader[T], error), create func(string, WriterOptions) (Writer[T], error),
	partsOf func(*T) map[string]float64) (int64, error) {
	if format, _ := FormatOf(to); format == Parquet {
		var parts []string
		var err error
		if in.Path != "" {
			parts, err = ScanRewardParts(in.Path)
		} else {
			parts, err = scanRecordRewardParts(ctx, open, partsOf)
		}
		if err != nil {
			return 0, err
		}
		opts.RewardParts = append(opts.RewardParts, parts...)
	}
	r, err := open(ctx)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	w, err := create(to, opts)
	if err != nil {
		return 0, err
	}
	n, err := Copy(w, Cancelable(ctx, r))
	if err != nil {
		Abort(w) // a file at to stays as it was
		return n, err
	}
	if err := w.Close(); err != nil {
		return n, err
	}
	return n, nil
}

// scanRecordRewardParts reads every record open yields and returns the
// reward parts they have, sorted.
func scanRecordRewardParts[T any](ctx context.Context, open func(context.Context) (Reader[T], error), partsOf func(*T) map[string]float64) ([]string, error) {
	r, err := open(ctx)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	set := map[string]bool{}
	err = forEach(Cancelable(ctx, r), func(rec *T) {
		for p := range partsOf(rec) {
			set[p] = true
		}
	})
	if err != nil {
		return nil, err
	}
	parts := make([]string, 0, len(set))
	for p := range set {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	return parts, nil
}
