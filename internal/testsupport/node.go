package testsupport

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// NodePackage returns the folder of npm package pkg ("hyparquet",
// "@huggingface/transformers") in scripts/node_modules, where `make
// scripts-npm` (a dependency of `make test`) installs the scripts/ npm
// workspace, and the path of node. It skips the test (fails it under CI=true)
// when either is missing.
func NodePackage(t testing.TB, pkg string) (dir, node string) {
	t.Helper()
	dir = filepath.Join(RepoRoot(t), "scripts", "node_modules", filepath.FromSlash(pkg))
	if _, err := os.Stat(filepath.Join(dir, "package.json")); err != nil {
		SkipOrFail(t, "npm package %s is not installed in scripts/node_modules (make scripts-npm)", pkg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		SkipOrFail(t, "node is not installed")
	}
	return dir, node
}
