package policystore

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestOpenVersionByFolder opens a published version from its folder alone (as
// a reader of the Redis pointer does) and refuses folders that are not a
// complete version.
func TestOpenVersionByFolder(t *testing.T) {
	dir := t.TempDir()
	s := openStore(t, dir)
	published := publish(t, s, 3)

	v, err := OpenVersion(filepath.Join(dir, "v000003"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(v, published) {
		t.Fatalf("OpenVersion = %+v, want %+v", v, published)
	}
	if err := Verify(context.Background(), v); err != nil {
		t.Fatal(err)
	}

	wantErr(t, errOf(OpenVersion(dir)), "not a version directory")
	wantErr(t, errOf(OpenVersion(filepath.Join(dir, "v000004"))), "version 4", "missing")
	// A folder named like a version without a manifest (a copy in progress).
	half := filepath.Join(t.TempDir(), "v000005")
	if err := os.Mkdir(half, 0o755); err != nil {
		t.Fatal(err)
	}
	wantErr(t, errOf(OpenVersion(half)), "no manifest.json")
	// A manifest of another version under this name.
	renamed := filepath.Join(t.TempDir(), "v000007")
	if err := os.Rename(filepath.Join(dir, "v000003"), renamed); err != nil {
		t.Fatal(err)
	}
	wantErr(t, errOf(OpenVersion(renamed)), "says version 3, want 7")
}
