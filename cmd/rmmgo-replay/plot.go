package main

import (
	"fmt"
	"image/color"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// plotFormats are the picture formats -plot writes, by file extension.
var plotFormats = []string{".png", ".svg", ".pdf"}

func checkPlotPath(path string) error {
	ext := strings.ToLower(filepath.Ext(path))
	for _, f := range plotFormats {
		if ext == f {
			return nil
		}
	}
	return fmt.Errorf("-plot %q: the file name must end in one of %v", path, plotFormats)
}

// drawPlot draws live bytes, reserved bytes and (when known) the largest
// free block over the event index, and marks the allocations that failed.
func drawPlot(path, title string, res *result) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "event"
	p.Y.Label.Text = "MiB"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	const mib = 1 << 20
	n := len(res.Samples)
	live, reserved, largest := make(plotter.XYs, n), make(plotter.XYs, n), make(plotter.XYs, n)
	for i, s := range res.Samples {
		x := float64(s.Index)
		live[i] = plotter.XY{X: x, Y: float64(s.Live) / mib}
		reserved[i] = plotter.XY{X: x, Y: float64(s.Reserved) / mib}
		largest[i] = plotter.XY{X: x, Y: float64(s.LargestFree) / mib}
	}
	series := []struct {
		name string
		xys  plotter.XYs
		c    color.RGBA
		dash []vg.Length
	}{
		{"reserved from the device", reserved, color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, nil},
		{"live (requested)", live, color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, nil},
	}
	if res.HasLargestFree {
		series = append(series, struct {
			name string
			xys  plotter.XYs
			c    color.RGBA
			dash []vg.Length
		}{"largest free block", largest, color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, []vg.Length{vg.Points(4), vg.Points(2)}})
	}
	for _, s := range series {
		if len(s.xys) == 0 {
			continue
		}
		l, err := plotter.NewLine(s.xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", s.name, err)
		}
		l.Color = s.c
		l.Width = vg.Points(1.5)
		l.Dashes = s.dash
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	if len(res.Failures) > 0 {
		pts := make(plotter.XYs, 0, len(res.Failures))
		for _, f := range res.Failures {
			pts = append(pts, plotter.XY{X: float64(f.Index), Y: liveAt(res.Samples, f.Index) / mib})
		}
		sc, err := plotter.NewScatter(pts)
		if err != nil {
			return fmt.Errorf("plotting failures: %w", err)
		}
		sc.GlyphStyle.Shape = draw.CrossGlyph{}
		sc.GlyphStyle.Color = color.Black
		sc.GlyphStyle.Radius = vg.Points(3)
		p.Add(sc)
		p.Legend.Add(fmt.Sprintf("failed allocations (%d)", len(res.Failures)), sc)
	}
	p.Y.Min = 0
	p.Y.Max *= 1.2 // room for the legend
	p.X.Tick.Marker = integerTicks{}
	if err := p.Save(10*vg.Inch, 5*vg.Inch, path); err != nil {
		return fmt.Errorf("writing the plot: %w", err)
	}
	return nil
}

// liveAt is the live bytes of the sample covering event index i.
func liveAt(samples []sample, i int) float64 {
	k := sort.Search(len(samples), func(k int) bool { return samples[k].Index >= i })
	switch {
	case k < len(samples):
		return float64(samples[k].Live)
	case len(samples) > 0:
		return float64(samples[len(samples)-1].Live)
	}
	return 0
}

// integerTicks are gonum's default ticks labelled as whole numbers: event
// indexes have no fractions.
type integerTicks struct{}

func (integerTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = strconv.FormatFloat(ticks[i].Value, 'f', 0, 64)
		}
	}
	return ticks
}
