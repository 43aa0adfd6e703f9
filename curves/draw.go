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
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/toolrl/toolrl/internal/atomicfile"
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
// missing: reward, accuracy, call rate, calls per trajectory, response
// length, loss, gradient norm, KL, rollout/learner mismatch, clip fraction,
// entropy, and eval accuracy and call rate by each split field. Each run has
// its own colour; a run's rollout series is light and solid, its eval series
// full, dashed and marked, with a 95% band for shares. A chart no run has a
// point of is skipped. It returns every chart considered, in order, and
// stops at the first error.
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
	if c.axis == logarithmic && !c.anyPositive() {
		// Nothing to draw on a log axis (e.g. a mismatch of exactly 0 in
		// every update): draw the zeros on a linear one, and say so.
		c.axis = fromZero
		p.Title.Text += " (every point 0: linear axis)"
	}
	scale := 1.0
	if c.axis == share {
		scale = 100
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.series {
		points, band, dropped := s.drawable(c.axis, scale)
		if len(points) == 0 {
			continue
		}
		col := seriesColor(s.color)
		if s.light {
			col = lighten(col)
		}
		var thumbs []plot.Thumbnailer
		if len(band) > 0 {
			poly, err := plotter.NewPolygon(band)
			if err != nil {
				return nil, fmt.Errorf("%s band: %w", s.label, err)
			}
			poly.Color = fade(col)
			poly.LineStyle.Width = 0
			p.Add(poly)
			thumbs = append(thumbs, poly)
			for _, pt := range band {
				lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
			}
		}
		for _, pt := range points {
			lo, hi = math.Min(lo, pt.Y), math.Max(hi, pt.Y)
		}
		line, err := plotter.NewLine(points)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.label, err)
		}
		line.Color = col
		line.Width = vg.Points(1.2)
		if s.kind > 0 {
			line.Width = vg.Points(2)
			line.Dashes = kindDashes[(s.kind-1)%len(kindDashes)]
		}
		p.Add(line)
		thumbs = append(thumbs, line)
		// Evaluations (a band) and the second kind are marked; a lone
		// point draws no line: mark it whatever its kind.
		if s.kind > 0 || len(band) > 0 || len(points) == 1 {
			marks, err := plotter.NewScatter(points)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.label, err)
			}
			marks.GlyphStyle = draw.GlyphStyle{Color: col, Radius: vg.Points(2.5), Shape: markShape(s)}
			p.Add(marks)
			thumbs = append(thumbs, marks)
		}
		label := shorten(s.label, 48)
		if len(band) > 0 {
			label += " (" + bandNote(s.band) + ")"
		}
		if dropped > 0 {
			label += fmt.Sprintf(" (%d points ≤ 0 not drawn)", dropped)
		}
		legend.Add(label, thumbs...)
	}
	c.fitY(p, lo, hi)

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

// kindDashes are the dash patterns of kinds 1, 2, 3 (kind 0 is solid).
var kindDashes = [][]vg.Length{
	{vg.Points(6), vg.Points(3)},
	{vg.Points(2), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(2), vg.Points(2)},
}

// okabeIto is Okabe and Ito's colour-blind-safe palette (black last, as
// it reads as a grid or axis colour), the series' colours in order.
var okabeIto = []color.NRGBA{
	{0xE6, 0x9F, 0x00, 0xff}, // orange
	{0x56, 0xB4, 0xE9, 0xff}, // sky blue
	{0x00, 0x9E, 0x73, 0xff}, // bluish green
	{0xD5, 0x5E, 0x00, 0xff}, // vermillion
	{0x00, 0x72, 0xB2, 0xff}, // blue
	{0xCC, 0x79, 0xA7, 0xff}, // reddish purple
	{0xF0, 0xE4, 0x42, 0xff}, // yellow
	{0x00, 0x00, 0x00, 0xff}, // black
}

// seriesColor is a chart's i-th series colour; after eight they repeat
// (the line style and marker still tell series apart).
func seriesColor(i int) color.NRGBA { return okabeIto[i%len(okabeIto)] }

// lighten mixes col halfway with white: the rollout series of a run whose
// eval series has the full colour, so that the pair reads as one run.
func lighten(col color.NRGBA) color.NRGBA {
	mix := func(c uint8) uint8 { return uint8((int(c) + 255) / 2) }
	return color.NRGBA{mix(col.R), mix(col.G), mix(col.B), col.A}
}

// fade is col at a fifth of its opacity, for confidence bands.
func fade(col color.NRGBA) color.Color {
	col.A = 0x33
	return col
}

// drawable is the series' points and band polygon in the axis' units
// (scaled by scale), leaving out what the axis cannot draw: points ≤ 0 on
// a logarithmic axis (counted in dropped).
func (s series) drawable(a axis, scale float64) (points plotter.XYs, band plotter.XYs, dropped int) {
	for _, pt := range s.points {
		if a == logarithmic && pt.Y <= 0 {
			dropped++
			continue
		}
		points = append(points, plotter.XY{X: pt.X, Y: scale * pt.Y})
	}
	if len(s.band) != len(s.points) || len(s.band) < 2 || a == logarithmic {
		return points, nil, dropped
	}
	for i, pt := range s.points {
		band = append(band, plotter.XY{X: pt.X, Y: scale * s.band[i].hi})
	}
	for i := len(s.points) - 1; i >= 0; i-- {
		band = append(band, plotter.XY{X: s.points[i].X, Y: scale * s.band[i].lo})
	}
	return points, band, dropped
}

// anyPositive is whether some series has a point above 0.
func (c chart) anyPositive() bool {
	for _, s := range c.series {
		for _, pt := range s.points {
			if pt.Y > 0 {
				return true
			}
		}
	}
	return false
}

// decadeTicks are gonum's log ticks labelled as short powers of ten
// ("1e-06"), not as the float nearest a computed power ("9.99…e-06").
type decadeTicks struct{}

// Ticks implements plot.Ticker.
func (decadeTicks) Ticks(min, max float64) []plot.Tick {
	var ticks []plot.Tick
	for _, t := range (plot.LogTicks{}).Ticks(min, max) {
		if t.Value < min || t.Value > max {
			continue // gonum pads the axis for labels beyond the data
		}
		if t.Label != "" {
			t.Label = strconv.FormatFloat(t.Value, 'g', 1, 64)
		}
		ticks = append(ticks, t)
	}
	return ticks
}

// yRange is the y axis' span for data (and bands) spanning lo..hi in the
// axis' units: a share's padded span within 0–100 %, 0 to the padded top
// for a never-negative quantity, gonum's fit otherwise. ok is false when
// gonum's own fit is kept (a fitted or logarithmic axis).
func (a axis) yRange(lo, hi float64) (min, max float64, ok bool) {
	if math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return 0, 0, false
	}
	switch a {
	case share:
		pad := math.Max(0.08*(hi-lo), 1)
		return math.Max(0, lo-pad), math.Min(100, hi+pad), true
	case fromZero:
		if hi <= 0 {
			return 0, 1, true
		}
		return 0, hi * 1.08, true
	}
	return 0, 0, false
}

// fitY fits p's y axis to the data span lo..hi (see yRange), with a log
// scale for a logarithmic chart.
func (c chart) fitY(p *plot.Plot, lo, hi float64) {
	if c.axis == logarithmic {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = decadeTicks{}
		return
	}
	if min, max, ok := c.axis.yRange(lo, hi); ok {
		p.Y.Min, p.Y.Max = min, max
	}
}

// markShapes are the markers of the runs' marked series, by run.
var markShapes = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.RingGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{},
}

// markShape is a marked series' marker (its run's), or a filled circle for
// a lone point.
func markShape(s series) draw.GlyphDrawer {
	if s.kind > 0 || len(s.band) > 0 {
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

// writeFile replaces path with data through a temporary file in the same
// folder, so that a viewer never opens a half-written chart.
func writeFile(path string, data []byte) error { return atomicfile.WriteFile(path, data) }
