package report

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"github.com/corral-dev/corral/jepsen/history"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// shade colours of fault families.
func shade(name string) color.Color {
	switch {
	case strings.HasPrefix(name, "partition"):
		return color.NRGBA{R: 80, G: 120, B: 255, A: 55}
	case strings.HasPrefix(name, "pause"):
		return color.NRGBA{R: 255, G: 200, B: 0, A: 70}
	case strings.HasPrefix(name, "combo"):
		return color.NRGBA{R: 180, G: 60, B: 220, A: 55}
	case strings.HasPrefix(name, "wipe"), strings.HasPrefix(name, "restart"):
		return color.NRGBA{R: 0, G: 170, B: 170, A: 55}
	}
	return color.NRGBA{R: 255, G: 80, B: 80, A: 50} // kill, leader-kill
}

// PlotLatency draws every operation's latency over time (log scale), one
// series per function for successes and one each for failures and
// unknown outcomes, with the fault windows shaded.
func PlotLatency(path string, pairs []history.Pair, windows []history.Window) error {
	p := plot.New()
	p.Title.Text = "corral jepsen: latency over time (shaded: faults)"
	p.X.Label.Text = "time since start (s)"
	p.Y.Label.Text = "latency (ms)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	series := map[string]plotter.XYs{}
	order := []string{history.FBoot, history.FDelete, history.FAction, history.FRead, history.FList, history.Fail, history.Info}
	lo, hi, tmax := math.Inf(1), 1.0, 1.0
	for _, pr := range pairs {
		if pr.Complete == nil {
			continue
		}
		key := pr.Invoke.F
		if t := pr.Type(); (t == history.Fail && !pr.Complete.Value.NotFound) || t == history.Info {
			key = t
		}
		y := math.Max(float64(pr.Latency().Microseconds())/1000, 0.1) // ms
		x := float64(pr.Invoke.Time) / 1e9
		series[key] = append(series[key], plotter.XY{X: x, Y: y})
		lo, hi, tmax = math.Min(lo, y), math.Max(hi, y), math.Max(tmax, x)
	}
	if math.IsInf(lo, 1) {
		lo = 0.1
	}
	lo, hi = lo/1.5, hi*1.5
	for _, w := range windows {
		x0, x1 := float64(w.Start)/1e9, float64(w.End)/1e9
		poly, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: lo}, {X: x1, Y: lo}, {X: x1, Y: hi}, {X: x0, Y: hi}})
		if err != nil {
			return err
		}
		poly.Color = shade(w.Name)
		poly.LineStyle.Width = 0
		p.Add(poly)
		lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x0, Y: hi / 1.3}}, Labels: []string{w.Name}})
		if err == nil {
			for i := range lbl.TextStyle {
				lbl.TextStyle[i].Font.Size = vg.Points(7)
				lbl.TextStyle[i].Rotation = -math.Pi / 2
			}
			p.Add(lbl)
		}
	}
	styles := map[string]draw.GlyphStyle{
		history.FBoot:   {Color: color.NRGBA{G: 140, A: 255}, Radius: vg.Points(1.6), Shape: draw.CircleGlyph{}},
		history.FDelete: {Color: color.NRGBA{R: 150, G: 90, A: 255}, Radius: vg.Points(1.6), Shape: draw.SquareGlyph{}},
		history.FAction: {Color: color.NRGBA{R: 160, B: 160, A: 255}, Radius: vg.Points(1.6), Shape: draw.RingGlyph{}},
		history.FRead:   {Color: color.NRGBA{B: 200, A: 200}, Radius: vg.Points(1.2), Shape: draw.CircleGlyph{}},
		history.FList:   {Color: color.NRGBA{R: 100, G: 100, B: 100, A: 200}, Radius: vg.Points(1.2), Shape: draw.TriangleGlyph{}},
		history.Fail:    {Color: color.NRGBA{R: 220, A: 255}, Radius: vg.Points(2), Shape: draw.CrossGlyph{}},
		history.Info:    {Color: color.NRGBA{R: 255, G: 130, A: 255}, Radius: vg.Points(2.2), Shape: draw.PyramidGlyph{}},
	}
	for _, k := range order {
		xy := series[k]
		if len(xy) == 0 {
			continue
		}
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return err
		}
		sc.GlyphStyle = styles[k]
		p.Add(sc)
		label := k + " answered"
		if k == history.Fail || k == history.Info {
			label = k
		}
		p.Legend.Add(fmt.Sprintf("%s (%d)", label, len(xy)), sc)
	}
	p.Legend.Top = true
	p.Y.Min, p.Y.Max = lo, hi
	p.X.Min, p.X.Max = 0, tmax*1.01
	return p.Save(14*vg.Inch, 6*vg.Inch, path)
}
