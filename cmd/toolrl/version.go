package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/toolrl/toolrl/internal/metricsserver"
	"github.com/toolrl/toolrl/internal/openblas"
	"github.com/toolrl/toolrl/internal/ort"
	"github.com/toolrl/toolrl/model/train"
)

// version and revision are set at build time with -ldflags
// "-X main.version=... -X main.revision=..." (the Makefile's build: git
// describe and the commit).
var (
	version  = "dev"
	revision = ""
)

// build names this binary for toolrl_build_info.
func build() metricsserver.Build {
	return metricsserver.Build{Version: version, Revision: revision}
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the toolrl, Go and ONNX Runtime versions and the learner's GEMM",
		Example: "  toolrl version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			v, rev := build().Names()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "toolrl %s (revision %s)\n%s %s/%s\n", v, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			if err := ort.Init(); err != nil {
				return fmt.Errorf("onnxruntime: %w", err)
			}
			lib, _ := ort.LibraryPath()
			fmt.Fprintf(out, "onnxruntime %s (%s)\n", ort.Version(), lib)
			// The learner's GEMM, and the OpenBLAS kernels this CPU supports
			// (what a peer process on the same OpenBLAS should be given).
			fmt.Fprintf(out, "gemm %s\nopenblas_coretype %s\n", train.KernelName(), openblas.CoreType())
			return nil
		},
	}
}
