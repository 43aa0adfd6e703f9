package llama

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/toolrl/toolrl/internal/bytesize"
)

// ProgressDisplay shows a build's read and write steps (Progress) to a
// person: a bar of bytes when its writer is a terminal, otherwise a line at
// every tenth of a step. It is not safe for concurrent use.
type ProgressDisplay struct {
	out     io.Writer
	label   string
	bar     *progressbar.ProgressBar
	step    string
	logged  int64 // tenths of the step already reported
	isTerm  bool
	started time.Time
}

// NewProgressDisplay writes to out; each line starts with "label: ".
func NewProgressDisplay(out io.Writer, label string) *ProgressDisplay {
	p := &ProgressDisplay{out: out, label: label}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.isTerm = true
		}
	}
	return p
}

// Update shows pr; it fits ONNXOptions.Progress.
func (p *ProgressDisplay) Update(pr Progress) {
	if pr.Step != p.step {
		p.Finish()
		p.step, p.logged, p.started = pr.Step, 0, time.Now()
		if p.isTerm {
			p.bar = progressbar.NewOptions64(pr.TotalBytes, progressbar.OptionSetWriter(p.out), progressbar.OptionShowBytes(true),
				progressbar.OptionSetWidth(30), progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionClearOnFinish())
		}
	}
	desc := fmt.Sprintf("%s %d/%d tensors", pr.Step, pr.Tensors, pr.TotalTensors)
	if p.bar != nil {
		p.bar.Describe(desc)
		_ = p.bar.Set64(pr.Bytes)
		return
	}
	if pr.TotalBytes <= 0 {
		return
	}
	if tenth := 10 * pr.Bytes / pr.TotalBytes; tenth > p.logged || pr.Tensors == pr.TotalTensors {
		if tenth <= p.logged && p.logged == 10 {
			return
		}
		p.logged = tenth
		fmt.Fprintf(p.out, "%s: %s, %s of %s (%.1fs)\n", p.label, desc, bytesize.Format(pr.Bytes), bytesize.Format(pr.TotalBytes), time.Since(p.started).Seconds())
	}
}

// Finish ends the current step's bar, if any; call it when the build ends.
func (p *ProgressDisplay) Finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
}

// WriteSummary writes what a build did, for a person: what went in, what
// came out, what it cost. elapsed is the build's time, precision the
// graph's (ONNXOptions.Precision), peakRSS the process's peak resident
// bytes (0: not known, the line left out). Write errors are not reported,
// as for a person's terminal.
func (b *BuiltFolder) WriteSummary(w io.Writer, elapsed time.Duration, precision string, peakRSS int64) {
	cfg := b.Config
	fmt.Fprintf(w, "wrote %s in %.1fs: %s, %.1fM parameters, %s\n", b.Dir, elapsed.Seconds(), cfg.ModelType, float64(cfg.NumParams())/1e6, precision)
	fmt.Fprintf(w, "  architecture  %d layers, hidden %d, %d heads (%d kv, head_dim %d), intermediate %d, vocab %d, %s embeddings\n",
		cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.KVHeads(), cfg.HeadDimension(), cfg.IntermediateSize, cfg.VocabSize,
		map[bool]string{true: "tied", false: "untied"}[cfg.TieWordEmbeddings])
	fmt.Fprintf(w, "  weights in    %s\n", b.Source)
	fmt.Fprintf(w, "  onnx          %s\n", precision)
	fmt.Fprintf(w, "  written       %s in %d files\n", bytesize.Format(b.Bytes()), len(b.Files))
	if peakRSS > 0 {
		fmt.Fprintf(w, "  peak RSS      %s\n", bytesize.Format(peakRSS))
	}
	for i, name := range b.Files {
		fmt.Fprintf(w, "  %-36s %s\n", name, bytesize.Format(b.Sizes[i]))
	}
}
