package stream

import (
	"reflect"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/internal/trajtest"
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
	m = entry(bin)
	m.Values[FieldFormat] = "msgpack"
	if _, err := DecodeRecordEntry(m); err == nil || !strings.Contains(err.Error(), "msgpack") {
		t.Errorf("unknown format: %v", err)
	}
}
