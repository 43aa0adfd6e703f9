package export

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
)

// TestParquetWriterRemovesStaleTemps: temporary files that killed writers of
// the same output left are removed when a writer is created; other files,
// including another output's temporaries, stay.
func TestParquetWriterRemovesStaleTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.parquet.partial.parquet")
	stale := []string{".x.parquet.partial.parquet.tmp-123", ".x.parquet.partial.parquet.tmp-4294967295"}
	kept := []string{
		".other.parquet.tmp-5",                            // another output's
		".x.parquet.partial.parquet.tmp-9.parquet.tmp-77", // the temporary of output .x.parquet.partial.parquet.tmp-9.parquet
		".x.parquet.partial.parquet.tmp-",                 // not os.CreateTemp's shape
		"x.parquet",
	}
	for _, name := range append(slices.Clone(stale), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("PAR1 torn"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	w, err := CreateTrajectories(path, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(allTrajectories()[:3]...); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []string
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		got = append(got, e.Name())
	}
	want := append(slices.Clone(kept), filepath.Base(path))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("directory holds %q, want %q", got, want)
	}
}

// TestParquetWriterAfterSIGKILL: a writer SIGKILLed after writing and
// flushing leaves its temporary file and no output (nothing is readable
// before Close); the next writer of that output removes the leftover.
func TestParquetWriterAfterSIGKILL(t *testing.T) {
	if path := os.Getenv("TOOLRL_EXPORT_KILL_CHILD"); path != "" {
		w, err := CreateTrajectories(path, WriterOptions{RowsPerGroup: 2, RewardParts: testParts})
		if err != nil {
			os.Exit(3)
		}
		if w.Write(allTrajectories()[:5]...) != nil || w.Flush() != nil {
			os.Exit(4)
		}
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "t.parquet")
	cmd := exec.Command(os.Args[0], "-test.run", "^TestParquetWriterAfterSIGKILL$")
	cmd.Env = append(os.Environ(), "TOOLRL_EXPORT_KILL_CHILD="+path)
	err := cmd.Run()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want death by SIGKILL", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("output exists after a kill before Close (err %v)", err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".t.parquet.tmp-*"))
	if len(left) != 1 {
		t.Fatalf("temporary files after the kill: %q, want one", left)
	}
	w, err := CreateTrajectories(path, WriterOptions{RewardParts: testParts})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("stale %s still there after a new writer started (err %v)", left[0], err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
