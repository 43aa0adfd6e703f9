package curves

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Options size the charts.
type Options struct {
	// Width and Height are the PNG's size in pixels, each 200–8000; zero
	// means 1000 × 600.
	Width, Height int
}

// Validate refuses a size outside 200–8000 pixels a side (zero for both is
// the default size).
func (o Options) Validate() error {
	if o.Width == 0 && o.Height == 0 {
		return nil
	}
	for _, px := range []int{o.Width, o.Height} {
		if px < 200 || px > 8000 {
			return fmt.Errorf("chart size %d×%d pixels: want each side in 200–8000", o.Width, o.Height)
		}
	}
	return nil
}

// Chart is one chart Write considered.
type Chart struct {
	// Name is the file name, e.g. "accuracy.png".
	Name string
	// Path is where the PNG was written; empty when no run had a point of
	// the chart's quantity (e.g. no learner update took a step), and no file
	// was written.
	Path string
	// Series counts the lines drawn.
	Series int
}

// dpi is the charts' resolution: a pixel is 1/96 inch, as on screens.
const dpi = 96

// Write draws runs' charts as PNG files into dir, which it creates if
// missing: reward, accuracy, call rate, calls per trajectory, KL, clip
// fraction, entropy, and eval accuracy by each split field. Each run has
// its own color and dash pattern; a chart's second kind of series (eval,
// dual clip) is drawn with markers. A chart no run has a point of is
// skipped. It returns every chart considered, in order, and stops at the
// first error.
func Write(dir string, runs []Run, opts Options) ([]Chart, error) {
	if len(runs) == 0 {
		return nil, errors.New("no runs to plot")
	}
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if opts.Width == 0 && opts.Height == 0 {
		opts.Width, opts.Height = 1000, 600
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var out []Chart
	for _, c := range charts(runs) {
		written := Chart{Name: c.file}
		for _, s := range c.series {
			if len(s.points) > 0 {
				written.Series++
			}
		}
		if written.Series == 0 {
			out = append(out, written)
			continue
		}
		png, err := c.render(opts.Width, opts.Height)
		if err != nil {
			return out, fmt.Errorf("draw %s: %w", c.file, err)
		}
		written.Path = filepath.Join(dir, c.file)
		if err := writeFile(written.Path, png); err != nil {
			return out, err
		}
		out = append(out, written)
	}
	return out, nil
}

// render draws the chart as a PNG of w×h pixels: the plot on the left, its
// legend in a column on the right, so that no line is hidden under it.
func (c chart) render(w, h int) ([]byte, error) {
	p := plot.New()
	p.Title.Text = c.title
	p.Title.Padding = vg.Points(6)
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = "iteration"
	p.X.Tick.Marker = iterationTicks{}
	p.Y.Label.Text = c.yLabel
	p.Add(plotter.NewGrid())
	legend := plot.NewLegend()
	legend.Top, legend.Left = true, true
	legend.TextStyle.Font.Size = vg.Points(10)
	legend.Padding = vg.Points(3)
	for _, s := range c.series {
		if len(s.points) == 0 {
			continue
		}
		points := s.points
		if c.percent {
			points = make(plotter.XYs, len(s.points))
			for i, pt := range s.points {
				points[i] = plotter.XY{X: pt.X, Y: 100 * pt.Y}
			}
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		line.Color = runColor(s.color)
		line.Width = vg.Points(1.5)
		line.Dashes = plotutil.Dashes(s.run)
		p.Add(line)
		thumbs := []plot.Thumbnailer{line}
		// A lone point draws no line: mark it whatever the series' kind.
		if s.marked || len(points) == 1 {
			marks, err := plotter.NewScatter(points)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.label, err)
			}
			marks.GlyphStyle = draw.GlyphStyle{Color: runColor(s.color), Radius: vg.Points(2.5), Shape: markShape(s)}
			p.Add(marks)
			thumbs = append(thumbs, marks)
		}
		legend.Add(shorten(s.label, 48), thumbs...)
	}
	if c.full {
		p.Y.Min, p.Y.Max = 0, 100
		p.Y.Tick.Marker = plot.ConstantTicks(percentTicks())
	}

	canvas := vgimg.NewWith(vgimg.UseWH(vg.Length(w)*vg.Inch/dpi, vg.Length(h)*vg.Inch/dpi), vgimg.UseDPI(dpi))
	dc := draw.Crop(draw.New(canvas), vg.Points(8), -vg.Points(12), vg.Points(8), -vg.Points(8))
	legendWidth := legend.Rectangle(dc).Size().X
	gap := vg.Points(16)
	plotArea := draw.Crop(dc, 0, -(legendWidth + gap), 0, 0)
	p.Draw(plotArea)
	// The legend's column starts level with the plot's data area, below the
	// title.
	titleHeight := p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
	legendArea := draw.Crop(dc, plotArea.Size().X+gap, 0, 0, -titleHeight)
	legend.Draw(legendArea)

	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: canvas}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// runColor is the i-th of plotutil's dark colors (7, then they repeat with
// the next dash pattern).
func runColor(i int) color.Color {
	return plotutil.DarkColors[i%len(plotutil.DarkColors)]
}

// markShapes are the markers of the runs' marked series, by run.
var markShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
}

// markShape is a marked series' marker (its run's), or a filled circle for
// a lone point.
func markShape(s series) draw.GlyphDrawer {
	if s.marked {
		return markShapes[s.run%len(markShapes)]
	}
	return draw.CircleGlyph{}
}

// shorten cuts a legend label to n runes, so that a long folder name does
// not squeeze the plot.
func shorten(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// iterationTicks marks whole iterations: labels every 1, 2 or 5 × 10^k
// iterations (at most 8 steps across the axis), minor ticks between.
type iterationTicks struct{}

// Ticks implements plot.Ticker.
func (iterationTicks) Ticks(min, max float64) []plot.Tick {
	lo, hi := math.Ceil(min), math.Floor(max)
	if !(hi >= lo) || math.IsInf(hi-lo, 0) {
		return nil
	}
	step, minor := 1.0, 1.0
	for scale := 1.0; ; scale *= 10 {
		if step, minor = scale, math.Max(1, scale/5); (hi-lo)/step <= 8 {
			break
		}
		if step, minor = 2*scale, scale; (hi-lo)/step <= 8 {
			break
		}
		if step, minor = 5*scale, scale; (hi-lo)/step <= 8 {
			break
		}
	}
	var ticks []plot.Tick
	for v := math.Ceil(lo/minor) * minor; v <= hi; v += minor {
		t := plot.Tick{Value: v}
		if math.Mod(v, step) == 0 {
			t.Label = strconv.FormatFloat(v, 'f', -1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// percentTicks mark a 0–100 % axis every 10, labelled every 20.
func percentTicks() []plot.Tick {
	var ticks []plot.Tick
	for v := 0; v <= 100; v += 10 {
		t := plot.Tick{Value: float64(v)}
		if v%20 == 0 {
			t.Label = fmt.Sprint(v)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// writeFile replaces path with data through a temporary file in the same
// folder, so that a viewer never opens a half-written chart.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if err := f.Chmod(0o644); err != nil { // CreateTemp makes it 0600
		f.Close()
		os.Remove(tmp)
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}
