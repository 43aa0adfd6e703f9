package export

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
)

// ScanRewardParts returns the sorted reward part names of a file's records,
// cheaply: for Parquet from its reward_<part> columns, for JSONL by decoding
// only each line's reward parts (group lines included) without validating
// the records. Pass the result as WriterOptions.RewardParts when converting a
// file to Parquet.
func ScanRewardParts(path string) ([]string, error) {
	format, err := FormatOf(path)
	if err != nil {
		return nil, err
	}
	if format == Parquet {
		kind, err := DetectKind(path)
		if err != nil {
			return nil, err
		}
		f, closer, err := openParquetFile(path)
		if err != nil {
			return nil, err
		}
		defer closer.Close()
		static := reflect.TypeFor[trajectoryRow]()
		if kind == Advantages {
			static = reflect.TypeFor[advantageRow]()
		}
		parts, err := partsOfFile(f.Schema(), static)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		slices.Sort(parts)
		return parts, nil
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("scan reward parts: %w", err)
	}
	defer file.Close()
	var in io.Reader = file
	if format == JSONLGzip {
		gz, err := gzip.NewReader(file)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", path, err)
		}
		defer gz.Close()
		in = gz
	}
	// A record's parts: reward_parts (v3), or the parts of the reward
	// object (v1, v2; in v3 "reward" is a number, which oldReward skips).
	type recordParts struct {
		Parts  map[string]float64 `json:"reward_parts"`
		Reward oldReward          `json:"reward"`
	}
	type probe struct {
		recordParts
		Trajectories []recordParts `json:"trajectories"`
	}
	set := map[string]bool{}
	br := bufio.NewReaderSize(in, 1<<20)
	for line := 1; ; line++ {
		data, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(data)) > 0 {
			var p probe
			if jerr := json.Unmarshal(data, &p); jerr != nil {
				return nil, fmt.Errorf("%s line %d: %w", path, line, jerr)
			}
			for _, q := range append(p.Trajectories, p.recordParts) {
				for name := range q.Parts {
					set[name] = true
				}
				for name := range q.Reward.Parts {
					set[name] = true
				}
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, line, err)
		}
	}
	parts := make([]string, 0, len(set))
	for name := range set {
		parts = append(parts, name)
	}
	slices.Sort(parts)
	return parts, nil
}

// oldReward is the reward object of schema v1 and v2; it reads a v3 reward
// (a number) as no parts.
type oldReward struct {
	Parts map[string]float64
}

// UnmarshalJSON reads {"total": ..., "parts": {...}}, or skips a number or null.
func (r *oldReward) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil
	}
	var v struct {
		Parts map[string]float64 `json:"parts"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	r.Parts = v.Parts
	return nil
}
