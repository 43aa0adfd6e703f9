package stream

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// An advantages-stream entry decodes to the same record in either format; a
// binary entry missing an array field, or an entry of an unknown format, is
// refused naming the entry and the field.
func TestDecodeRecordEntryFormats(t *testing.T) {
	g := trajtest.Group(trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7), Rewards: []float64{1, 0}})
	rec := trajtest.Record(g.Trajectories[1], 0.5)
	entry := func(fields []Field) Message {
		m := Message{ID: "7-0", Values: map[string]any{}}
		for _, f := range fields {
			m.Values[f.Name] = string(f.Value)
		}
		return m
	}
	data, err := wire.EncodeRecord(&rec)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := DecodeRecordEntry(entry(RecordFields(&rec, data)))
	if err != nil {
		t.Fatal(err)
	}
	bin, err := BinaryRecordFields(&rec)
	if err != nil {
		t.Fatal(err)
	}
	fromBinary, err := DecodeRecordEntry(entry(bin))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromJSON, fromBinary) || fromJSON.TrajectoryID != rec.TrajectoryID {
		t.Fatalf("formats differ:\n%+v\n%+v", fromJSON, fromBinary)
	}
	m := entry(bin)
	delete(m.Values, "advantages")
	if _, err := DecodeRecordEntry(m); err == nil || !strings.Contains(err.Error(), `entry 7-0: no "advantages" field`) {
		t.Errorf("missing array: %v", err)
	}
	// A binary entry names its arrays as its schema does: v3's names, and
	// v2's (loss_mask, old_logprobs, ref_logprobs) in an entry of a v2 record.
	for _, name := range []string{"response_mask", "rollout_log_probs", "ref_log_prob"} {
		if _, ok := entry(bin).Values[name]; !ok {
			t.Errorf("binary v3 entry has no %s field", name)
		}
	}
	old := rec
	old.Schema = traj.AdvantageSchemaV2
	oldBin, err := BinaryRecordFields(&old)
	if err != nil {
		t.Fatal(err)
	}
	m = entry(oldBin)
	for _, name := range []string{"loss_mask", "old_logprobs", "ref_logprobs"} {
		if _, ok := m.Values[name]; !ok {
			t.Errorf("binary v2 entry has no %s field", name)
		}
	}
	if back, err := DecodeRecordEntry(m); err != nil || back.Schema != traj.AdvantageSchemaV2 || !reflect.DeepEqual(back.LossMask, rec.LossMask) {
		t.Errorf("binary v2 entry: %v", err)
	}
	m.Values["response_mask"] = m.Values["loss_mask"]
	delete(m.Values, "loss_mask")
	if _, err := DecodeRecordEntry(m); err == nil || !strings.Contains(err.Error(), `no "loss_mask" field`) {
		t.Errorf("v2 entry with a v3 array name: %v", err)
	}
	m = entry(bin)
	m.Values[FieldFormat] = "msgpack"
	if _, err := DecodeRecordEntry(m); err == nil || !strings.Contains(err.Error(), "msgpack") {
		t.Errorf("unknown format: %v", err)
	}
}
