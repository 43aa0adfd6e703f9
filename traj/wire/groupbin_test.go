package wire

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
)

// Every group decodes from the binary format to what its JSON decodes to:
// random shapes (corner cases, v1 groups, with and without ref_logprobs) and
// the benchmark's group.
func TestGroupBinaryRoundTrip(t *testing.T) {
	groups := []*traj.Group{trajtest.Synthetic("bench", 1, 8, 64)}
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 3))
		o := trajtest.Options{Size: 1 + int(seed%5), Temperature: trajtest.Temperature(0.7), Sample: trajtest.RolloutRewards}
		g := trajtest.Random(rng, o, trajtest.Shape{Corners: seed%2 == 0})
		if seed%3 == 0 {
			for i := range g.Trajectories {
				g.Trajectories[i].RefLogprobs = nil
			}
		}
		if seed%5 == 1 {
			trajtest.AsV1(g)
		}
		groups = append(groups, g)
	}
	for _, g := range groups {
		js, err := EncodeGroup(g)
		if err != nil {
			t.Fatal(err)
		}
		want, err := DecodeGroup(js)
		if err != nil {
			t.Fatalf("%s: JSON: %v", g.GroupID, err)
		}
		bin, err := AppendGroupBinary(nil, g)
		if err != nil {
			t.Fatal(err)
		}
		if !IsGroupBinary(bin) || IsGroupBinary(js) {
			t.Fatalf("%s: IsGroupBinary does not tell the formats apart", g.GroupID)
		}
		got, err := DecodeGroupBinary(bin)
		if err != nil {
			t.Fatalf("%s: binary: %v", g.GroupID, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Fatalf("%s: binary decodes to\n%+v\nJSON to\n%+v", g.GroupID, got.Trajectories[0], want.Trajectories[0])
		}
		viaPayload, raws, err := DecodeGroupPayload(bin)
		if err != nil || !reflect.DeepEqual(*viaPayload, want) || len(raws) != len(want.Trajectories) || raws[0].Tokens != nil {
			t.Fatalf("%s: DecodeGroupPayload of the binary payload: %v", g.GroupID, err)
		}
		if _, raws, err := DecodeGroupPayload(js); err != nil || raws[0].Tokens == nil {
			t.Fatalf("%s: DecodeGroupPayload of the JSON payload: %v", g.GroupID, err)
		}
	}
}

// On a little-endian machine an aligned payload's arrays are views of it;
// a misaligned one is copied, to the same values.
func TestGroupBinaryViews(t *testing.T) {
	if !hostLittleEndian {
		t.Skip("big-endian: arrays are copied")
	}
	g := trajtest.Synthetic("bench", 1, 2, 16)
	bin, _ := AppendGroupBinary(nil, g)
	aligned := make([]byte, len(bin), len(bin)+1) // Go allocates ≥ 8-byte aligned
	copy(aligned, bin)
	got, err := DecodeGroupBinary(aligned)
	if err != nil {
		t.Fatal(err)
	}
	in := func(p unsafe.Pointer) bool {
		a := uintptr(unsafe.Pointer(&aligned[0]))
		return uintptr(p) >= a && uintptr(p) < a+uintptr(len(aligned))
	}
	tr := &got.Trajectories[1]
	if !in(unsafe.Pointer(&tr.Tokens[0])) || !in(unsafe.Pointer(&tr.Logprobs[0])) || !in(unsafe.Pointer(&tr.LossMask[0])) {
		t.Errorf("aligned payload: arrays copied, want views")
	}
	shifted := make([]byte, len(bin)+1)
	copy(shifted[1:], bin)
	got2, err := DecodeGroupBinary(shifted[1:])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, got2) {
		t.Errorf("misaligned payload decodes differently")
	}
	if in(unsafe.Pointer(&got2.Trajectories[1].Logprobs[0])) {
		t.Errorf("misaligned payload's floats are views")
	}
}

// Malformed binary payloads are refused with an error naming the group (once
// its header was read) and the field.
func TestGroupBinaryRejects(t *testing.T) {
	g := trajtest.Synthetic("job", 1, 2, 4)
	good, _ := AppendGroupBinary(nil, g)
	hlen := int(binary.LittleEndian.Uint32(good[8:]))
	body := 16 + (hlen+3)/4*4 // the first trajectory's lengths
	put := func(b []byte, at int, v uint32) []byte {
		b = append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(b[at:], v)
		return b
	}
	firstLogprob := body + 16 + 4*len(g.Trajectories[0].Tokens) + (len(g.Trajectories[0].LossMask)+3)/4*4
	withJSONArray := strings.Replace(string(good[16:16+hlen]), `"input_ids":null`, `"input_ids":[1]`, 1)
	arrayInHeader := append(append([]byte(nil), good[:8]...), binary.LittleEndian.AppendUint32(nil, uint32(len(withJSONArray)))...)
	arrayInHeader = append(arrayInHeader, good[12:16]...)
	arrayInHeader = pad4(append(arrayInHeader, withJSONArray...))
	arrayInHeader = append(arrayInHeader, good[body:]...)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"JSON", []byte(`{"group_id":"x"}`), "magic"},
		{"version", put(good, 4, 2), "version: 2"},
		{"header past the end", put(good, 8, uint32(len(good))), "header: needs"},
		{"trajectory count", put(good, 12, 3), "job/p0000001: binary: trajectories: 3 in the prefix but 2"},
		{"tokens past the end", put(good, body, 1<<30), "job/p0000001: binary: trajectories[0] (job/p0000001/0): input_ids: needs"},
		{"truncated", good[:len(good)-4], "trajectories[1] (job/p0000001/1): ref_log_prob: needs"},
		{"trailing", append(append([]byte(nil), good...), 0, 0, 0, 0), "4 trailing bytes"},
		{"NaN logprob", put(good, firstLogprob, math.Float32bits(float32(math.NaN()))), "rollout_log_probs[0]"},
		{"array in the header", arrayInHeader, "a per-token array in the header"},
		{"bad header", put(good, 16, 0x20202020), "binary: header: "},
	} {
		_, err := DecodeGroupBinary(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// Non-zero padding after the mask.
	tr := g.Trajectories[0]
	if len(tr.LossMask)%4 != 0 {
		bad := append([]byte(nil), good...)
		bad[body+16+4*len(tr.Tokens)+len(tr.LossMask)] = 7
		if _, err := DecodeGroupBinary(bad); err == nil || !strings.Contains(err.Error(), "loss_mask padding") {
			t.Errorf("non-zero mask padding: %v", err)
		}
	}
}

// FuzzDecodeGroupBinary: the binary decoder never panics, and what it
// accepts encodes back to a payload that decodes to the same group.
func FuzzDecodeGroupBinary(f *testing.F) {
	g := trajtest.Random(rand.New(rand.NewPCG(1, 2)), trajtest.Options{Size: 2, Temperature: trajtest.Temperature(0.7)}, trajtest.Shape{Corners: true})
	seed, _ := AppendGroupBinary(nil, g)
	f.Add(seed)
	small, _ := AppendGroupBinary(nil, trajtest.Synthetic("j", 0, 1, 2))
	f.Add(small)
	f.Add([]byte(GroupBinaryMagic + "\x01\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00{}\x00\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := DecodeGroupBinary(data)
		if err != nil {
			return
		}
		again, err := AppendGroupBinary(nil, got)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		back, err := DecodeGroupBinary(again)
		if err != nil || !reflect.DeepEqual(back, got) {
			t.Fatalf("re-encoded group decodes to %v, %v", back, err)
		}
	})
}
