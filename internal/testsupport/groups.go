package testsupport

import (
	"os"
	"testing"

	"github.com/toolrl/toolrl/traj"
	"github.com/toolrl/toolrl/traj/wire"
)

// ReadGroup decodes the JSON group file at path (a fixture such as
// traj/testdata/parallel-calls-group.json) with toolrl's codec, failing
// the test when it cannot be read or decoded.
func ReadGroup(t testing.TB, path string) traj.Group {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := wire.DecodeGroup(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return g
}
