package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/toolrl/toolrl/export"
	"github.com/toolrl/toolrl/traj"
)

// groupHeader is the part of a trajectory line resume needs.
type groupHeader struct {
	GroupID   string `json:"group_id"`
	GroupSize int    `json:"group_size"`
}

// jsonlSink appends groups to a JSONL file of trajectories, one line each,
// flushed (fsync) after every group. On resume it cuts a group a crash left
// half-written, so the file only ever holds whole groups. Its settings
// record is the sidecar SettingsPath(path).
type jsonlSink struct {
	fileSettings // fresh: truncate on the first write instead of appending
	path         string
	w            export.TrajectoryWriter
}

// Resume scans the file's group blocks (a group's lines are contiguous)
// and truncates the file after the last complete one.
func (s *jsonlSink) Resume(ctx context.Context) (map[string]bool, error) {
	done := map[string]bool{}
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<20)
	var offset, goodEnd int64
	var cur groupHeader
	count, line := 0, 0
	for {
		raw, err := r.ReadBytes('\n')
		if len(raw) > 0 && raw[len(raw)-1] == '\n' {
			line++
			var h groupHeader
			if jerr := json.Unmarshal(raw, &h); jerr != nil || h.GroupID == "" {
				return nil, fmt.Errorf("%s:%d: not a trajectory line (resume needs the job's own output): %v", s.path, line, jerr)
			}
			if h.GroupID != cur.GroupID {
				cur, count = h, 0
			}
			count++
			offset += int64(len(raw))
			if count == cur.GroupSize {
				done[cur.GroupID] = true
				goodEnd = offset
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", s.path, err)
		}
	}
	if st, err := f.Stat(); err == nil && st.Size() != goodEnd {
		if err := os.Truncate(s.path, goodEnd); err != nil {
			return nil, fmt.Errorf("cut the partial group at the end of %s: %w", s.path, err)
		}
	}
	return done, nil
}

func (s *jsonlSink) WriteGroup(ctx context.Context, g *traj.Group) (bool, error) {
	if s.w == nil {
		// In place, appended to and flushed per group: the file is the log
		// a resume reads after a crash (a fresh run starts it empty), not a
		// temporary file renamed into place at Close.
		if s.fresh {
			if err := os.Truncate(s.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return false, fmt.Errorf("replace %s: %w", s.path, err)
			}
		}
		w, err := export.CreateTrajectories(s.path, export.WriterOptions{Append: true})
		if err != nil {
			return false, err
		}
		s.w = w
	}
	if err := s.w.Write(g.Trajectories...); err != nil {
		return false, err
	}
	return true, s.w.Flush()
}

func (s *jsonlSink) Close() error {
	if s.w == nil {
		// A run that wrote nothing still leaves its (possibly empty) output.
		flags := os.O_CREATE | os.O_WRONLY
		if s.fresh {
			flags |= os.O_TRUNC
		}
		f, err := os.OpenFile(s.path, flags, 0o644)
		if err != nil {
			return err
		}
		return f.Close()
	}
	err := s.w.Close()
	s.w = nil
	return err
}
