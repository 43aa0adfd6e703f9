package sink

import (
	"context"
	"errors"
	"io"
	"os"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/reward"
	"github.com/toolrl/toolrl/traj"
)

// parquetSink writes a Parquet file of trajectories. Parquet files cannot be
// appended to, so on resume the complete groups of the old file are copied
// into a new one, written beside it and renamed over it at Close: a crash
// leaves the old file intact. Its settings record is the sidecar
// SettingsPath(path).
type parquetSink struct {
	fileSettings
	path, tmp string
	keep      []traj.Trajectory
	w         export.TrajectoryWriter
}

func (s *parquetSink) Resume(ctx context.Context) (map[string]bool, error) {
	done := map[string]bool{}
	r, err := export.OpenTrajectories(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	byGroup := map[string][]traj.Trajectory{}
	var order []string
	for {
		t, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if _, seen := byGroup[t.GroupID]; !seen {
			order = append(order, t.GroupID)
		}
		byGroup[t.GroupID] = append(byGroup[t.GroupID], t)
	}
	for _, id := range order {
		members := byGroup[id]
		if len(members) == members[0].GroupSize {
			done[id] = true
			s.keep = append(s.keep, members...)
		}
	}
	return done, nil
}

func (s *parquetSink) open() error {
	s.tmp = s.path + ".partial"
	w, err := export.CreateTrajectories(s.tmp+".parquet", export.WriterOptions{RewardParts: reward.PartNames()})
	if err != nil {
		return err
	}
	s.w = w
	if len(s.keep) > 0 {
		if err := s.w.Write(s.keep...); err != nil {
			return err
		}
		s.keep = nil
	}
	return nil
}

func (s *parquetSink) WriteGroup(ctx context.Context, g *traj.Group) (bool, error) {
	if s.w == nil {
		if err := s.open(); err != nil {
			return false, err
		}
	}
	return true, s.w.Write(g.Trajectories...)
}

func (s *parquetSink) Close() error {
	if s.w == nil {
		if len(s.keep) == 0 {
			if _, err := os.Stat(s.path); err == nil {
				return nil // resumed with nothing new: the old file stands
			}
		}
		if err := s.open(); err != nil {
			return err
		}
	}
	if err := s.w.Close(); err != nil {
		return err
	}
	s.w = nil
	return os.Rename(s.tmp+".parquet", s.path)
}
