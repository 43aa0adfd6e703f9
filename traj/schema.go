package traj

// Schema versions written into every record and checked on decode.
// TrajectorySchema and AdvantageSchema are the current versions, the ones
// writers use; Validate accepts them, V2 and V1.
const (
	TrajectorySchema = "toolrl.trajectory/v3"
	AdvantageSchema  = "toolrl.advantage/v3"

	// TrajectorySchemaV2 and AdvantageSchemaV2 are the versions before the
	// v3 renames (TrajectoryRenames, AdvantageRenames). They are read,
	// never written.
	TrajectorySchemaV2 = "toolrl.trajectory/v2"
	AdvantageSchemaV2  = "toolrl.advantage/v2"

	// TrajectorySchemaV1 and AdvantageSchemaV1 are the first versions, without
	// temperature and iteration, spelled as v2. They are read, never written.
	TrajectorySchemaV1 = "toolrl.trajectory/v1"
	AdvantageSchemaV1  = "toolrl.advantage/v1"
)

// FieldNames are the JSON names of the fields that schema v3 renamed, as one
// schema version spells them. Reward and RewardParts are dotted paths in v1
// and v2, where the reward is an object {"total": ..., "parts": {...}}.
type FieldNames struct {
	Tokens, Mask, Logprobs, RefLogprobs, Reward, RewardParts string
}

var (
	trajectoryNamesV3  = FieldNames{"input_ids", "response_mask", "rollout_log_probs", "ref_log_prob", "reward", "reward_parts"}
	trajectoryNamesOld = FieldNames{"tokens", "loss_mask", "logprobs", "ref_logprobs", "reward.total", "reward.parts"}
	advantageNamesV3   = FieldNames{"input_ids", "response_mask", "rollout_log_probs", "ref_log_prob", "reward", "reward_parts"}
	advantageNamesOld  = FieldNames{"input_ids", "loss_mask", "old_logprobs", "ref_logprobs", "reward.total", "reward.parts"}
)

// TrajectoryNames returns the names of the renamed fields in a trajectory
// or group of the given schema: v1 and v2 spell them the old way, v3 (and
// anything else) the current way.
func TrajectoryNames(schema string) *FieldNames {
	if schema == TrajectorySchemaV2 || schema == TrajectorySchemaV1 {
		return &trajectoryNamesOld
	}
	return &trajectoryNamesV3
}

// AdvantageNames returns the names of the renamed fields in an advantage
// record of the given schema, as TrajectoryNames does.
func AdvantageNames(schema string) *FieldNames {
	if schema == AdvantageSchemaV2 || schema == AdvantageSchemaV1 {
		return &advantageNamesOld
	}
	return &advantageNamesV3
}

// Rename is one field schema v3 renamed: its v3 name and its name in v1 and
// v2.
type Rename struct{ V3, Old string }

// TrajectoryRenames and AdvantageRenames list the renames of v3, for
// documentation (docs/schema.md) and for readers of older data.
var (
	TrajectoryRenames = renames(&trajectoryNamesV3, &trajectoryNamesOld)
	AdvantageRenames  = renames(&advantageNamesV3, &advantageNamesOld)
)

func renames(v3, old *FieldNames) []Rename {
	var out []Rename
	for _, p := range [][2]string{{v3.Tokens, old.Tokens}, {v3.Mask, old.Mask}, {v3.Logprobs, old.Logprobs},
		{v3.RefLogprobs, old.RefLogprobs}, {v3.Reward, old.Reward}, {v3.RewardParts, old.RewardParts}} {
		if p[0] != p[1] {
			out = append(out, Rename{V3: p[0], Old: p[1]})
		}
	}
	return out
}
