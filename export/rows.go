package export

import (
	"encoding/json"

	"github.com/toolrl/toolrl/traj"
)

// The Parquet row types. Column names and types are the public file format
// (docs/export.md); the reward_<part> columns are added at run time after the
// "reward" column (see layout.go).
//
// Lists are optional (nullable) where traj's JSON can say null or omit them,
// so that a round trip keeps absent and empty apart exactly as the JSON codec
// does: a field tagged omitempty in traj is written null when empty and read
// back nil; the others keep null (nil) and [] (empty) apart.
//
// temperature (schema v2) is a nullable DOUBLE: null is unknown (v1 data).
// iteration (schema v2) is an INT64, 0 for a plain rollout. Files written
// before these columns existed lack them; readers take such files and read
// temperature as null and iteration as 0 (addedColumns).

// segmentRow is one element of the segments list column.
type segmentRow struct {
	Kind   string     `parquet:"kind"`
	Turn   int64      `parquet:"turn"`
	Start  int64      `parquet:"start"`
	End    int64      `parquet:"end"`
	Text   string     `parquet:"text"`
	Call   *callRow   `parquet:"call,optional"`
	Result *resultRow `parquet:"result,optional"`
}

type callRow struct {
	Name string `parquet:"name"`
	// Arguments is the raw JSON text of the arguments; null when absent.
	Arguments  *string `parquet:"arguments,optional"`
	Raw        string  `parquet:"raw"`
	ParseError string  `parquet:"parse_error"`
}

type resultRow struct {
	OK         bool    `parquet:"ok"`
	ErrorClass string  `parquet:"error_class"`
	Error      string  `parquet:"error"`
	Content    string  `parquet:"content"`
	LatencyMS  float64 `parquet:"latency_ms"`
	Truncated  bool    `parquet:"truncated"`
	// Fault is optional so that files written before it read (as "").
	Fault string `parquet:"fault,optional"`
}

// trajectoryRow is one trajectory, with the JSON's names (schema v3).
// Files written before v3 name three columns differently (oldColumns):
// loss_mask, old_logprobs and ref_logprobs.
type trajectoryRow struct {
	ID            string   `parquet:"id"`
	JobID         string   `parquet:"job_id"`
	PromptID      string   `parquet:"prompt_id"`
	Iteration     int64    `parquet:"iteration"`
	GroupID       string   `parquet:"group_id"`
	GroupSize     int64    `parquet:"group_size"`
	SampleIndex   int64    `parquet:"sample_index"`
	PolicyVersion int64    `parquet:"policy_version"`
	Seed          uint64   `parquet:"seed"`
	Temperature   *float64 `parquet:"temperature,optional"`
	ModelName     string   `parquet:"model_name"`
	ModelHash     string   `parquet:"model_hash"`
	// ModelQuantization is traj.ModelRef.Quantization: "" for full
	// precision, and for files written before the column existed.
	ModelQuantization string       `parquet:"model_quantization"`
	PromptLen         int64        `parquet:"prompt_len"`
	InputIDs          []int32      `parquet:"input_ids,list"`
	LossMask          []uint8      `parquet:"response_mask,optional,list" parquet-element:",uint(8)"`
	OldLogprobs       []float32    `parquet:"rollout_log_probs,optional,list"`
	RefLogprobs       []float32    `parquet:"ref_log_prob,optional,list"`
	FinishReason      string       `parquet:"finish_reason"`
	Reward            float64      `parquet:"reward"`
	StepRewards       []float64    `parquet:"step_rewards,optional,list"`
	Answer            string       `parquet:"answer"`
	Meta              *string      `parquet:"meta,optional"`
	Segments          []segmentRow `parquet:"segments,optional,list"`
}

// advantageRow is one advantage record, the row a trainer's loss consumes.
type advantageRow struct {
	TrajectoryID  string       `parquet:"trajectory_id"`
	GroupID       string       `parquet:"group_id"`
	Iteration     int64        `parquet:"iteration"`
	SampleIndex   int64        `parquet:"sample_index"`
	PolicyVersion int64        `parquet:"policy_version"`
	Temperature   *float64     `parquet:"temperature,optional"`
	PromptLen     int64        `parquet:"prompt_len"`
	InputIDs      []int32      `parquet:"input_ids,list"`
	LossMask      []uint8      `parquet:"response_mask,optional,list" parquet-element:",uint(8)"`
	OldLogprobs   []float32    `parquet:"rollout_log_probs,optional,list"`
	RefLogprobs   []float32    `parquet:"ref_log_prob,optional,list"`
	Advantages    []float32    `parquet:"advantages,optional,list"`
	KL            []float32    `parquet:"kl,optional,list"`
	KLEstimator   string       `parquet:"kl_estimator"`
	Reward        float64      `parquet:"reward"`
	StepRewards   []float64    `parquet:"step_rewards,optional,list"`
	Mode          string       `parquet:"mode"`
	Estimator     string       `parquet:"estimator"`
	ZeroVariance  bool         `parquet:"zero_variance"`
	Stale         bool         `parquet:"stale"`
	Segments      []segmentRow `parquet:"segments,optional,list"`
}

// rowCodec converts one record kind to and from its Parquet row.
type rowCodec[T, R any] struct {
	kind     Kind
	validate func(*T) error
	id       func(*T) string
	parts    func(*T) map[string]float64
	toRow    func(*T, *R) error
	// fromRow builds the record of the given schema version (the file's);
	// parts is nil when the row has none.
	fromRow func(r *R, parts map[string]float64, schema string) T
}

// addedColumns are the columns of a schema version after v1, which files
// written before it lack: a reader takes such a file and reads them as null
// (temperature) or 0 (iteration).
var addedColumns = map[string]bool{"temperature": true, "iteration": true, "model_quantization": true}

var trajectoryRows = &rowCodec[traj.Trajectory, trajectoryRow]{
	kind:     Trajectories,
	validate: (*traj.Trajectory).Validate,
	id:       func(t *traj.Trajectory) string { return t.ID },
	parts:    func(t *traj.Trajectory) map[string]float64 { return t.Reward.Parts },
	toRow: func(t *traj.Trajectory, r *trajectoryRow) (err error) {
		*r = trajectoryRow{
			ID: t.ID, JobID: t.JobID, PromptID: t.PromptID, Iteration: int64(t.Iteration), GroupID: t.GroupID,
			GroupSize: int64(t.GroupSize), SampleIndex: int64(t.SampleIndex), PolicyVersion: t.PolicyVersion,
			Seed: t.Seed, Temperature: t.Temperature, ModelName: t.Model.Name, ModelHash: t.Model.Hash,
			ModelQuantization: t.Model.Quantization, PromptLen: int64(t.PromptLen), InputIDs: t.Tokens, LossMask: []uint8(t.LossMask),
			OldLogprobs: t.Logprobs, RefLogprobs: omitEmpty(t.RefLogprobs),
			FinishReason: string(t.FinishReason), Reward: t.Reward.Total, StepRewards: omitEmpty(t.StepRewards),
			Answer: t.Answer, Meta: rawToColumn(t.Meta, &err), Segments: segmentsToRows(t.Segments, false, &err),
		}
		return err
	},
	fromRow: func(r *trajectoryRow, parts map[string]float64, schema string) traj.Trajectory {
		return traj.Trajectory{
			Schema: schema, ID: r.ID, JobID: r.JobID, PromptID: r.PromptID, Iteration: int(r.Iteration), GroupID: r.GroupID,
			GroupSize: int(r.GroupSize), SampleIndex: int(r.SampleIndex), PolicyVersion: r.PolicyVersion,
			Seed: r.Seed, Temperature: r.Temperature, Model: traj.ModelRef{Name: r.ModelName, Hash: r.ModelHash, Quantization: r.ModelQuantization},
			Tokens: r.InputIDs, PromptLen: int(r.PromptLen), LossMask: traj.Mask(r.LossMask),
			Logprobs: r.OldLogprobs, RefLogprobs: omitEmpty(r.RefLogprobs),
			Segments: segmentsFromRows(r.Segments, false), FinishReason: traj.FinishReason(r.FinishReason),
			Reward: traj.Reward{Total: r.Reward, Parts: parts}, StepRewards: omitEmpty(r.StepRewards),
			Answer: r.Answer, Meta: columnToRaw(r.Meta),
		}
	},
}

var advantageRows = &rowCodec[traj.AdvantageRecord, advantageRow]{
	kind:     Advantages,
	validate: (*traj.AdvantageRecord).Validate,
	id:       func(a *traj.AdvantageRecord) string { return a.TrajectoryID },
	parts:    func(a *traj.AdvantageRecord) map[string]float64 { return a.Reward.Parts },
	toRow: func(a *traj.AdvantageRecord, r *advantageRow) (err error) {
		*r = advantageRow{
			TrajectoryID: a.TrajectoryID, GroupID: a.GroupID, Iteration: int64(a.Iteration), SampleIndex: int64(a.SampleIndex),
			PolicyVersion: a.PolicyVersion, Temperature: a.Temperature, PromptLen: int64(a.PromptLen), InputIDs: a.InputIDs,
			LossMask: []uint8(a.LossMask), OldLogprobs: a.OldLogprobs, RefLogprobs: omitEmpty(a.RefLogprobs),
			Advantages: a.Advantages, KL: omitEmpty(a.KL), KLEstimator: a.KLEstimator,
			Reward: a.Reward.Total, StepRewards: omitEmpty(a.StepRewards),
			Mode: a.Mode, Estimator: a.Estimator, ZeroVariance: a.ZeroVariance, Stale: a.Stale,
			Segments: segmentsToRows(a.Segments, true, &err),
		}
		return err
	},
	fromRow: func(r *advantageRow, parts map[string]float64, schema string) traj.AdvantageRecord {
		return traj.AdvantageRecord{
			Schema: schema, TrajectoryID: r.TrajectoryID, GroupID: r.GroupID, Iteration: int(r.Iteration),
			SampleIndex: int(r.SampleIndex), PolicyVersion: r.PolicyVersion, Temperature: r.Temperature,
			InputIDs: r.InputIDs, PromptLen: int(r.PromptLen), LossMask: traj.Mask(r.LossMask),
			OldLogprobs: r.OldLogprobs, RefLogprobs: omitEmpty(r.RefLogprobs), Advantages: r.Advantages,
			KL: omitEmpty(r.KL), KLEstimator: r.KLEstimator,
			Reward: traj.Reward{Total: r.Reward, Parts: parts}, StepRewards: omitEmpty(r.StepRewards),
			Segments: segmentsFromRows(r.Segments, true),
			Mode:     r.Mode, Estimator: r.Estimator, ZeroVariance: r.ZeroVariance, Stale: r.Stale,
		}
	},
}

// omitEmpty maps an empty slice to nil, as JSON's omitempty does on a round trip.
func omitEmpty[E any](s []E) []E {
	if len(s) == 0 {
		return nil
	}
	return s
}

// rawToColumn stores raw JSON as the text encoding/json writes for it
// (compacted, HTML-escaped), so that it reads back as a JSON round trip
// would; absent (omitempty) is null. The error is encoding/json's for invalid
// JSON.
func rawToColumn(raw json.RawMessage, err *error) *string {
	if len(raw) == 0 {
		return nil
	}
	data, jerr := json.Marshal(raw)
	if jerr != nil && *err == nil {
		*err = jerr
	}
	s := string(data)
	return &s
}

func columnToRaw(s *string) json.RawMessage {
	if s == nil || *s == "" {
		return nil
	}
	return json.RawMessage(*s)
}

// segmentsToRows converts segments; omit says the field is omitempty (an
// empty list is written null).
func segmentsToRows(segs []traj.Segment, omit bool, err *error) []segmentRow {
	if segs == nil || (omit && len(segs) == 0) {
		return nil
	}
	rows := make([]segmentRow, len(segs))
	for i, s := range segs {
		rows[i] = segmentRow{Kind: string(s.Kind), Turn: int64(s.Turn), Start: int64(s.Start), End: int64(s.End), Text: s.Text}
		if c := s.Call; c != nil {
			rows[i].Call = &callRow{Name: c.Name, Arguments: rawToColumn(c.Arguments, err), Raw: c.Raw, ParseError: c.ParseError}
		}
		if res := s.Result; res != nil {
			rows[i].Result = &resultRow{OK: res.OK, ErrorClass: res.ErrorClass, Error: res.Error, Content: res.Content,
				LatencyMS: res.LatencyMS, Truncated: res.Truncated, Fault: res.Fault}
		}
	}
	return rows
}

func segmentsFromRows(rows []segmentRow, omit bool) []traj.Segment {
	if rows == nil || (omit && len(rows) == 0) {
		return nil
	}
	segs := make([]traj.Segment, len(rows))
	for i, r := range rows {
		segs[i] = traj.Segment{Kind: traj.SegmentKind(r.Kind), Turn: int(r.Turn), Start: int(r.Start), End: int(r.End), Text: r.Text}
		if c := r.Call; c != nil {
			segs[i].Call = &traj.ToolCall{Name: c.Name, Arguments: columnToRaw(c.Arguments), Raw: c.Raw, ParseError: c.ParseError}
		}
		if res := r.Result; res != nil {
			segs[i].Result = &traj.ToolResult{OK: res.OK, ErrorClass: res.ErrorClass, Error: res.Error, Content: res.Content,
				LatencyMS: res.LatencyMS, Truncated: res.Truncated, Fault: res.Fault}
		}
	}
	return segs
}
