package prompt

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
)

// LineError is a malformed prompts line.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// Set is the result of reading a prompts file.
type Set struct {
	Prompts []Prompt
	// Skipped are the malformed lines skipped under skip-invalid.
	Skipped []*LineError
}

// ReadFile reads a JSONL prompts file. A malformed line (bad JSON, unknown
// field, missing or duplicate id, an id with '@' or '/', neither or both of
// prompt and messages) stops the read with a *LineError naming the file and
// line, unless skipInvalid, in which case it is recorded in Skipped. Blank
// lines are ignored. limit > 0 stops after that many valid prompts. A file
// with no valid prompt (empty, blank, or every line skipped) is an error
// naming the file.
func ReadFile(path string, limit int, skipInvalid bool) (Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return Set{}, fmt.Errorf("read prompts: %w", err)
	}
	defer f.Close()
	return read(f, path, limit, skipInvalid)
}

func read(r io.Reader, name string, limit int, skipInvalid bool) (Set, error) {
	var set Set
	seen := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 64*1024*1024)
	line := 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		p, err := parse(raw)
		if err == nil {
			if first, dup := seen[p.ID]; dup {
				err = fmt.Errorf("id %q already used on line %d", p.ID, first)
			}
		}
		if err != nil {
			perr := &LineError{File: name, Line: line, Err: err}
			if !skipInvalid {
				return set, perr
			}
			set.Skipped = append(set.Skipped, perr)
			continue
		}
		p.Line = line
		seen[p.ID] = line
		set.Prompts = append(set.Prompts, p)
		if limit > 0 && len(set.Prompts) >= limit {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return set, fmt.Errorf("read prompts %s line %d: %w", name, line+1, err)
	}
	if len(set.Prompts) == 0 {
		// A job over no prompts would write nothing and report success.
		if len(set.Skipped) > 0 {
			return set, fmt.Errorf("read prompts %s: no valid prompts (%d malformed lines skipped, the first: %v)", name, len(set.Skipped), set.Skipped[0])
		}
		return set, fmt.Errorf("read prompts %s: no prompts: the file is empty or blank", name)
	}
	return set, nil
}
