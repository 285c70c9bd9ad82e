package ops

import (
	"bufio"
	"errors"
	"fmt"
	"html"
	"io"
	"math"
	"time"

	"github.com/cubestudio/cube/internal/timebound"
)

// SVG layout, in pixels: the packing planner's (vgpu Plan.WriteSVG), so the
// two pictures sit side by side.
const (
	svgLabelWidth = 220
	svgBarWidth   = 520
	svgTextWidth  = 200
	svgRowHeight  = 18
	svgBarHeight  = 12
	svgHeader     = 46
	svgColumns    = 130 // time buckets per row: 4 px each
)

// WriteUtilisationSVG draws utilisation per device over [from, to]: one
// row per series (namespace/pod and device), time running left to right in
// equal buckets, each bucket coloured by its mean utilisation from pale
// (idle) through amber to red (busy), empty where there were no samples,
// and each row's mean and peak on the right. Rows whose peak stayed under
// idleBelow percent are marked idle. Hover a bucket for its time and value.
// A nil w and a to not after from are errors, reported together.
func WriteUtilisationSVG(w io.Writer, series []DeviceSeries, from, to time.Time, idleBelow float64) error {
	var errs []error
	if w == nil {
		errs = append(errs, errors.New("w: must not be nil"))
	}
	errs = append(errs, timebound.Check("from", from), timebound.Check("to", to))
	if !to.After(from) {
		errs = append(errs, errors.New("to: must be after from"))
	}
	if !(idleBelow >= 0 && idleBelow <= 100) {
		errs = append(errs, fmt.Errorf("idleBelow: %v must be a percent in [0, 100]", idleBelow))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("write utilisation svg: %w", err)
	}
	bw := bufio.NewWriter(w)
	width := svgLabelWidth + svgBarWidth + svgTextWidth
	height := svgHeader + svgRowHeight*len(series) + 8
	span := to.Sub(from)
	idle := 0
	type row struct {
		sums       [svgColumns]float64
		counts     [svgColumns]int
		mean, peak float64
	}
	rows := make([]row, len(series))
	for i, s := range series {
		r := &rows[i]
		var sum float64
		var n int
		for _, smp := range s.Utilisation {
			// A NaN or infinite sample is no measurement: drawn, it
			// would colour its cell by an undefined conversion.
			if smp.At.Before(from) || smp.At.After(to) || math.IsNaN(smp.Value) || math.IsInf(smp.Value, 0) {
				continue
			}
			col := min(int(float64(smp.At.Sub(from))/float64(span)*svgColumns), svgColumns-1)
			r.sums[col] += smp.Value
			r.counts[col]++
			sum += smp.Value
			r.peak = max(r.peak, smp.Value)
			n++
		}
		if n > 0 {
			r.mean = sum / float64(n)
			if r.peak < idleBelow {
				idle++
			}
		}
	}
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(bw, `<text x="8" y="16" font-size="13" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("accelerator utilisation: %d devices, %d idle (peak under %.0f%%)", len(series), idle, idleBelow)))
	fmt.Fprintf(bw, `<text x="8" y="34">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("%s to %s, %s per column", from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339),
			(span/svgColumns).Round(time.Second))))
	cell := float64(svgBarWidth) / svgColumns
	for i, s := range series {
		r := rows[i]
		y := svgHeader + i*svgRowHeight
		fmt.Fprintf(bw, `<g transform="translate(0,%d)">`+"\n", y)
		fmt.Fprintf(bw, `<text x="8" y="%d">%s</text>`+"\n", svgBarHeight-2,
			html.EscapeString(fmt.Sprintf("%s/%s %s", s.Namespace, s.Pod, shortDevice(s.Device))))
		fmt.Fprintf(bw, `<rect x="%d" y="0" width="%d" height="%d" fill="#eeeeee" stroke="#bbbbbb" stroke-width="0.5"/>`+"\n",
			svgLabelWidth, svgBarWidth, svgBarHeight)
		for col := range svgColumns {
			if r.counts[col] == 0 {
				continue
			}
			v := r.sums[col] / float64(r.counts[col])
			at := from.Add(span * time.Duration(col) / svgColumns)
			fmt.Fprintf(bw, `<rect x="%.1f" y="0" width="%.1f" height="%d" fill="%s"><title>%s</title></rect>`+"\n",
				float64(svgLabelWidth)+float64(col)*cell, cell, svgBarHeight, heat(v),
				html.EscapeString(fmt.Sprintf("%s %.0f%%", at.UTC().Format(time.RFC3339), v)))
		}
		mark := ""
		if r.peak < idleBelow && len(s.Utilisation) > 0 {
			mark = "  idle"
		}
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", svgLabelWidth+svgBarWidth+8, svgBarHeight-2,
			html.EscapeString(fmt.Sprintf("mean %3.0f%%  peak %3.0f%%%s", r.mean, r.peak, mark)))
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</svg>\n")
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write utilisation svg: %w", err)
	}
	return nil
}

// heat colours a utilisation percent: pale yellow when idle, red when busy.
func heat(v float64) string {
	v = min(max(v, 0), 100)
	hue := 55 - int(v*55/100)
	light := 88 - int(v*40/100)
	return fmt.Sprintf("hsl(%d,85%%,%d%%)", hue, light)
}

// shortDevice keeps device names readable: GPU UUIDs are 40 characters.
func shortDevice(d string) string {
	if len(d) > 16 {
		return d[:16] + "…"
	}
	return d
}
