package testsupport

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// CheckMetrics pipes a Prometheus text exposition (a /metrics body) through
// `promtool check metrics` (Debian's prometheus package; `make promtool`
// installs it) and fails the test on any finding or a non-zero exit: a
// lint problem (a counter without _total, a unit that is not a base unit,
// ...) is a failure, not a warning.
func CheckMetrics(t testing.TB, exposition string) {
	t.Helper()
	path := requireBinary(t, "promtool")
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = strings.NewReader(exposition)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if err != nil || out.Len() > 0 {
		t.Errorf("promtool check metrics: %v\n%s", err, out.String())
	}
}
