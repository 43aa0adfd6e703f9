package offline

import (
	"bufio"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"os"
	"sort"

	json "github.com/goccy/go-json"

	"github.com/toolrl/toolrl/traj"
)

// spillPartitions is the number of files partial groups spill into. Members
// of one group always land in the same file, so the files are regrouped one
// at a time at the end, each holding about 1/spillPartitions of what spilled.
const spillPartitions = 64

// grouper assembles trajectories into groups by group_id, whatever order they
// come in, holding at most about limit bytes of partial groups in memory.
// Past the limit it moves every partial group to the spill files and sends
// later members of those groups there too; Finish regroups the files one at a
// time. It is owned by one goroutine.
type grouper struct {
	limit int64
	dir   string
	emit  func(members []traj.Trajectory) error

	partial map[string][]traj.Trajectory
	order   []string // group ids in order of first member, for Finish
	bytes   int64

	spilled map[uint64]struct{} // hashes of group ids with members on disk
	files   []*spillFile

	// Peak is the largest estimate of partial-group bytes held at once.
	Peak int64
	// Spilled counts trajectories written to the spill files.
	Spilled int64
}

type spillFile struct {
	f *os.File
	w *bufio.Writer
}

func newGrouper(limit int64, dir string, emit func([]traj.Trajectory) error) *grouper {
	return &grouper{limit: limit, dir: dir, emit: emit, partial: map[string][]traj.Trajectory{},
		spilled: map[uint64]struct{}{}}
}

// trajectoryBytes estimates the memory a decoded trajectory holds.
func trajectoryBytes(t *traj.Trajectory) int64 {
	n := int64(len(t.Tokens))*4 + int64(len(t.LossMask)) + int64(len(t.Logprobs)+len(t.RefLogprobs))*4 +
		int64(len(t.StepRewards))*8 + int64(len(t.Meta)) + int64(len(t.Answer)) + 512
	for _, s := range t.Segments {
		n += 96 + int64(len(s.Text))
		if s.Call != nil {
			n += int64(len(s.Call.Raw) + len(s.Call.Arguments) + len(s.Call.ParseError))
		}
		if s.Result != nil {
			n += int64(len(s.Result.Content) + len(s.Result.Error))
		}
	}
	return n
}

// Add takes one trajectory; a group whose last member it is gets emitted.
func (g *grouper) Add(t traj.Trajectory) error {
	h := groupHash(0, t.GroupID)
	if _, ok := g.spilled[h]; ok {
		return g.spill(h, &t)
	}
	members, seen := g.partial[t.GroupID]
	if !seen {
		g.order = append(g.order, t.GroupID)
	}
	members = append(members, t)
	if len(members) == t.GroupSize {
		delete(g.partial, t.GroupID)
		for i := range members[:len(members)-1] {
			g.bytes -= trajectoryBytes(&members[i])
		}
		g.compactOrder()
		return g.emit(members)
	}
	g.partial[t.GroupID] = members
	g.bytes += trajectoryBytes(&t)
	g.Peak = max(g.Peak, g.bytes)
	if g.bytes > g.limit {
		return g.spillAll()
	}
	return nil
}

// compactOrder drops emitted ids from order once they make up most of it,
// so that order stays proportional to the partial groups.
func (g *grouper) compactOrder() {
	if len(g.order) < 1024 || len(g.order) < 4*len(g.partial) {
		return
	}
	kept := g.order[:0]
	for _, id := range g.order {
		if _, ok := g.partial[id]; ok {
			kept = append(kept, id)
		}
	}
	g.order = kept
}

// spillAll moves every partial group to the spill files.
func (g *grouper) spillAll() error {
	for _, id := range g.order {
		members, ok := g.partial[id]
		if !ok {
			continue
		}
		h := groupHash(0, id)
		g.spilled[h] = struct{}{}
		for i := range members {
			if err := g.spill(h, &members[i]); err != nil {
				return err
			}
		}
	}
	g.partial = map[string][]traj.Trajectory{}
	g.order = g.order[:0]
	g.bytes = 0
	return nil
}

func (g *grouper) spill(h uint64, t *traj.Trajectory) error {
	if g.files == nil {
		g.files = make([]*spillFile, spillPartitions)
	}
	p := h % spillPartitions
	sf := g.files[p]
	if sf == nil {
		f, err := os.CreateTemp(g.dir, "toolrl-advantage-spill-*.jsonl")
		if err != nil {
			return fmt.Errorf("spill partial groups: %w", err)
		}
		// The file is unlinked now: it disappears however the process ends.
		_ = os.Remove(f.Name())
		sf = &spillFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}
		g.files[p] = sf
	}
	data, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("spill trajectory %s: %w", t.ID, err)
	}
	data = append(data, '\n')
	if _, err := sf.w.Write(data); err != nil {
		return fmt.Errorf("spill trajectory %s to %s: %w", t.ID, sf.f.Name(), err)
	}
	g.Spilled++
	return nil
}

// Finish emits what is left: groups still partial in memory and every
// spilled group, one spill file at a time. Groups that never completed go to
// incomplete (in order of first member) instead of emit.
func (g *grouper) Finish(incomplete func(members []traj.Trajectory) error) error {
	defer g.Close()
	if g.files == nil {
		for _, id := range g.order {
			if members, ok := g.partial[id]; ok {
				if err := incomplete(members); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := g.spillAll(); err != nil {
		return err
	}
	for _, sf := range g.files {
		if sf == nil {
			continue
		}
		if err := g.regroup(sf, incomplete); err != nil {
			return err
		}
	}
	return nil
}

// regroup reads one spill file back and emits its groups in order of their
// first spilled member. A file bigger than the memory limit is first split
// again by a fresh hash into spillPartitions files, so that what is loaded at
// once stays near the limit however large the input (up to maxSplitDepth
// levels: beyond that one group alone exceeds the limit).
func (g *grouper) regroup(sf *spillFile, incomplete func([]traj.Trajectory) error) error {
	return g.regroupAt(sf, incomplete, 0)
}

const maxSplitDepth = 3

func (g *grouper) regroupAt(sf *spillFile, incomplete func([]traj.Trajectory) error, depth int) error {
	if err := sf.w.Flush(); err != nil {
		return fmt.Errorf("spill file %s: %w", sf.f.Name(), err)
	}
	if _, err := sf.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("spill file %s: %w", sf.f.Name(), err)
	}
	if info, err := sf.f.Stat(); err == nil && info.Size() > g.limit && depth < maxSplitDepth {
		return g.split(sf, incomplete, depth)
	}
	groups := map[string][]traj.Trajectory{}
	first := map[string]int{}
	r := bufio.NewReaderSize(sf.f, 64<<10)
	for n := 0; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			return fmt.Errorf("spill file %s line %d: %w", sf.f.Name(), n+1, err)
		}
		var t traj.Trajectory
		if err := json.Unmarshal(line, &t); err != nil {
			return fmt.Errorf("spill file %s line %d: %w", sf.f.Name(), n+1, err)
		}
		if _, ok := first[t.GroupID]; !ok {
			first[t.GroupID] = n
		}
		groups[t.GroupID] = append(groups[t.GroupID], t)
	}
	ids := make([]string, 0, len(groups))
	for id := range groups {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return first[ids[i]] < first[ids[j]] })
	for _, id := range ids {
		members := groups[id]
		delete(groups, id)
		var err error
		if len(members) == members[0].GroupSize {
			err = g.emit(members)
		} else {
			err = incomplete(members)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// split distributes one spill file over spillPartitions new ones by a fresh
// hash of the group id (members of a group stay together) and regroups each.
func (g *grouper) split(sf *spillFile, incomplete func([]traj.Trajectory) error, depth int) error {
	parts := make([]*spillFile, spillPartitions)
	defer func() {
		for _, p := range parts {
			if p != nil {
				p.f.Close()
			}
		}
	}()
	r := bufio.NewReaderSize(sf.f, 64<<10)
	for n := 0; ; n++ {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) && len(line) == 0 {
			break
		}
		if err != nil {
			return fmt.Errorf("spill file %s line %d: %w", sf.f.Name(), n+1, err)
		}
		var probe struct {
			GroupID string `json:"group_id"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return fmt.Errorf("spill file %s line %d: %w", sf.f.Name(), n+1, err)
		}
		i := groupHash(depth+1, probe.GroupID) % spillPartitions
		if parts[i] == nil {
			f, err := os.CreateTemp(g.dir, "toolrl-advantage-spill-*.jsonl")
			if err != nil {
				return fmt.Errorf("split spill file: %w", err)
			}
			_ = os.Remove(f.Name())
			parts[i] = &spillFile{f: f, w: bufio.NewWriterSize(f, 64<<10)}
		}
		if _, err := parts[i].w.Write(line); err != nil {
			return fmt.Errorf("split spill file into %s: %w", parts[i].f.Name(), err)
		}
	}
	// The parent's blocks can go before the children are read.
	if err := sf.f.Truncate(0); err != nil {
		return fmt.Errorf("spill file %s: %w", sf.f.Name(), err)
	}
	for i, p := range parts {
		if p == nil {
			continue
		}
		if err := g.regroupAt(p, incomplete, depth+1); err != nil {
			return err
		}
		p.f.Close()
		parts[i] = nil
	}
	return nil
}

// groupHash is FNV-1a of the group id salted with the split level: fixed,
// so that the same input always spills and regroups the same way and the
// output order is reproducible.
func groupHash(level int, groupID string) uint64 {
	h := fnv.New64a()
	h.Write([]byte{byte(level)})
	h.Write([]byte(groupID))
	return h.Sum64()
}

// Close removes the spill files (they are already unlinked; this releases
// them).
func (g *grouper) Close() {
	for _, sf := range g.files {
		if sf != nil {
			sf.f.Close()
		}
	}
	g.files = nil
}
