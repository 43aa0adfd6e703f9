package export

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolrl/toolrl/internal/trajtest"
	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// benchRecords is the benchmark data set: advantage records of the random
// generator (prompt ≤ 40 tokens, 1-4 turns of ≤ 60 model tokens and tool
// results between them), 1024 rows.
const benchRows = 1024

// jsonlBytes is the size of the data set as JSONL, the "logical" bytes every
// format's MB/s is measured against, so that MB/s compare across formats.
func benchData(b *testing.B) ([]traj.AdvantageRecord, int64) {
	b.Helper()
	_, recs := genRecords(42, benchRows)
	var n int64
	for i := range recs {
		line, err := wire.EncodeRecord(&recs[i])
		if err != nil {
			b.Fatal(err)
		}
		n += int64(len(line)) + 1
	}
	return recs, n
}

var benchFormats = []string{".jsonl", ".jsonl.gz", ".parquet"}

// BenchmarkWrite writes the data set to a new file per iteration, in batches
// of 64 records (what a sink writes per group flush), and closes it.
func BenchmarkWrite(b *testing.B) {
	recs, logical := benchData(b)
	for _, ext := range benchFormats {
		b.Run(ext[1:], func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench"+ext)
			b.SetBytes(logical)
			b.ReportAllocs()
			for b.Loop() {
				w, err := CreateAdvantages(path, WriterOptions{RewardParts: testParts})
				if err != nil {
					b.Fatal(err)
				}
				for i := 0; i < len(recs); i += 64 {
					if err := w.Write(recs[i:min(i+64, len(recs))]...); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			reportRows(b, path)
		})
	}
}

// BenchmarkRead reads (and validates) every record of the data set.
func BenchmarkRead(b *testing.B) {
	recs, logical := benchData(b)
	for _, ext := range benchFormats {
		b.Run(ext[1:], func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench"+ext)
			w, err := CreateAdvantages(path, WriterOptions{RewardParts: testParts})
			trajtest.WriteAll(b, w, err, recs...)
			b.SetBytes(logical)
			b.ReportAllocs()
			for b.Loop() {
				r, err := OpenAdvantages(path)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for {
					_, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				r.Close()
				if n != len(recs) {
					b.Fatalf("read %d records, want %d", n, len(recs))
				}
			}
			reportRows(b, path)
		})
	}
}

// reportRows adds rows/s and the file's bytes per row.
func reportRows(b *testing.B, path string) {
	b.Helper()
	b.ReportMetric(float64(benchRows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	if st, err := os.Stat(path); err == nil {
		b.ReportMetric(float64(st.Size())/benchRows, "file-B/row")
	}
}

// BenchmarkInterleaved writes and reads the data set in every format within
// each iteration, so that every format meets the same machine load, and
// reports each format's write and read MB/s and rows/s, and Parquet's and
// gzipped JSONL's speed as a ratio of JSONL's, measured in the same run.
func BenchmarkInterleaved(b *testing.B) {
	recs, logical := benchData(b)
	dir := b.TempDir()
	write := map[string]time.Duration{}
	read := map[string]time.Duration{}
	n := 0
	for b.Loop() {
		n++
		for _, ext := range benchFormats {
			path := filepath.Join(dir, "bench"+ext)
			start := time.Now()
			w, err := CreateAdvantages(path, WriterOptions{RewardParts: testParts})
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < len(recs); i += 64 {
				if err := w.Write(recs[i:min(i+64, len(recs))]...); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			write[ext] += time.Since(start)
			start = time.Now()
			r, err := OpenAdvantages(path)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := r.Next(); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
			r.Close()
			read[ext] += time.Since(start)
		}
	}
	for _, ext := range benchFormats {
		name := strings.TrimPrefix(ext, ".")
		b.ReportMetric(float64(logical)*float64(n)/1e6/write[ext].Seconds(), name+"-write-MB/s")
		b.ReportMetric(float64(benchRows)*float64(n)/write[ext].Seconds(), name+"-write-rows/s")
		b.ReportMetric(float64(logical)*float64(n)/1e6/read[ext].Seconds(), name+"-read-MB/s")
		b.ReportMetric(float64(benchRows)*float64(n)/read[ext].Seconds(), name+"-read-rows/s")
		if st, err := os.Stat(filepath.Join(dir, "bench"+ext)); err == nil {
			b.ReportMetric(float64(st.Size())/benchRows, name+"-file-B/row")
		}
	}
}
