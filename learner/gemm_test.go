package learner

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/toolrl/toolrl/model/train"
)

// TestNewRefusesAnOpenBLASThatDoesNotLoad: TOOLRL_OPENBLAS naming a missing
// file is an error that names it, not a silent fall back to the slower
// kernel. The library loads once per process, so the check runs in a child.
func TestNewRefusesAnOpenBLASThatDoesNotLoad(t *testing.T) {
	if os.Getenv("TOOLRL_GEMM_CHILD") == "1" {
		_, err := New(tinyTrainModel(t, 1), nil, 0, DefaultOptions())
		if err == nil {
			t.Fatal("New accepted the missing library")
		}
		t.Log(err)
		t.Log("kernel: " + train.KernelName())
		return
	}
	const lib = "/nonexistent/libopenblas.so.0"
	cmd := exec.Command(os.Args[0], "-test.run", "^TestNewRefusesAnOpenBLASThatDoesNotLoad$", "-test.v")
	cmd.Env = append(os.Environ(), "TOOLRL_GEMM_CHILD=1", "TOOLRL_OPENBLAS="+lib)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if want := "learner: the GEMM: TOOLRL_OPENBLAS=" + lib + ": stat " + lib + ": no such file or directory"; !strings.Contains(string(out), want) {
		t.Fatalf("child said:\n%s\nwant %q", out, want)
	}
	// toolrl version prints KernelName: it names the failure too.
	if want := "(OpenBLAS asked for and not loaded: TOOLRL_OPENBLAS=" + lib; !strings.Contains(string(out), want) {
		t.Fatalf("child said:\n%s\nwant %q", out, want)
	}
}
