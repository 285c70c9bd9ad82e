package vgpu

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strings"

	"github.com/cubestudio/cube/hardware"
)

// SVG layout, in pixels.
const (
	svgLabelWidth = 220
	svgBarWidth   = 520
	svgTextWidth  = 200
	svgRowHeight  = 18
	svgBarHeight  = 12
	svgHeader     = 46
)

// WriteSVG draws the plan: one row per device, a bar whose length is the
// device's memory, each demand a coloured segment of the memory it holds
// (MIG instances at their memory slices), a thin bar under it for compute,
// and the device's memory and compute utilisation on the right. Hover a
// segment for the demand's name.
func (p *Plan) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriter(w)
	width := svgLabelWidth + svgBarWidth + svgTextWidth
	height := svgHeader + svgRowHeight*len(p.Devices) + 8
	s := p.Summary
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(bw, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	fmt.Fprintf(bw, `<text x="8" y="16" font-size="13" font-weight="bold">%s</text>`+"\n",
		escape(fmt.Sprintf("%s: %d of %d demands on %d of %d devices (lower bound %d)",
			p.Policy, s.Placed, s.Demands, s.DevicesUsed, s.DevicesTotal, s.LowerBound)))
	fmt.Fprintf(bw, `<text x="8" y="34">%s</text>`+"\n",
		escape(fmt.Sprintf("memory %.1f%%, compute %.1f%% of used devices; stranded memory %s (%.1f%%)",
			100*s.MemoryUtilisation, 100*s.ComputeUtilisation, formatBytes(s.StrandedMemory), 100*s.Fragmentation)))
	for row, d := range p.Devices {
		y := svgHeader + row*svgRowHeight
		fmt.Fprintf(bw, `<g transform="translate(0,%d)">`+"\n", y)
		fmt.Fprintf(bw, `<text x="8" y="%d">%s</text>`+"\n", svgBarHeight-2,
			escape(fmt.Sprintf("%s/%d %s", d.Node, d.Index, d.Profile)))
		fmt.Fprintf(bw, `<rect x="%d" y="0" width="%d" height="%d" fill="#eeeeee" stroke="#bbbbbb" stroke-width="0.5"/>`+"\n",
			svgLabelWidth, svgBarWidth, svgBarHeight)
		offset := 0.0
		for _, sl := range d.Slices {
			x, w := segment(d, sl, &offset)
			fmt.Fprintf(bw, `<rect x="%.1f" y="0" width="%.1f" height="%d" fill="%s" stroke="#ffffff" stroke-width="0.5"><title>%s</title></rect>`+"\n",
				float64(svgLabelWidth)+x, w, svgBarHeight, colour(sl), escape(describeSlice(sl)))
		}
		cw := float64(svgBarWidth) * float64(d.ComputeRequested) / ComputeUnits
		fmt.Fprintf(bw, `<rect x="%d" y="%d" width="%.1f" height="3" fill="#555555"/>`+"\n", svgLabelWidth, svgBarHeight+1, cw)
		fmt.Fprintf(bw, `<text x="%d" y="%d">%s</text>`+"\n", svgLabelWidth+svgBarWidth+8, svgBarHeight-2,
			escape(fmt.Sprintf("mem %3.0f%%  compute %3.0f%%", 100*d.MemoryUtilisation(), 100*d.ComputeUtilisation())))
		bw.WriteString("</g>\n")
	}
	bw.WriteString("</svg>\n")
	return bw.Flush()
}

// segment is a slice's x offset and width on its device's bar.
func segment(d DeviceUsage, sl SliceUse, offset *float64) (x, w float64) {
	if d.MemoryBytes == 0 {
		return 0, 0
	}
	if sl.MIGStart >= 0 {
		unit := float64(svgBarWidth) / hardware.MIGMemorySlices
		return float64(sl.MIGStart) * unit, float64(sl.MIGSlices) * unit
	}
	w = float64(svgBarWidth) * float64(sl.MemoryReserved) / float64(d.MemoryBytes)
	x = *offset
	*offset += w
	return x, w
}

// colour gives each kind a hue family and each demand its own shade.
func colour(sl SliceUse) string {
	base := map[Kind]int{KindWhole: 215, KindSlice: 0, KindMIG: 130, KindVNPU: 30}[sl.Kind]
	spread := map[Kind]int{KindWhole: 20, KindSlice: 360, KindMIG: 60, KindVNPU: 40}[sl.Kind]
	hue := (base + (sl.Demand*137)%spread) % 360
	light := 45 + (sl.Demand*7)%20
	return fmt.Sprintf("hsl(%d,65%%,%d%%)", hue, light)
}

func describeSlice(sl SliceUse) string {
	parts := []string{sl.Name, string(sl.Kind)}
	switch {
	case sl.MIG != "":
		parts = append(parts, sl.MIG)
	case sl.Template != "":
		parts = append(parts, sl.Template)
	}
	parts = append(parts, formatBytes(sl.MemoryRequested))
	if sl.ComputeReserved > 0 && sl.Kind != KindWhole {
		parts = append(parts, fmt.Sprintf("%d%% compute", sl.ComputeReserved*100/ComputeUnits))
	}
	return strings.Join(parts, " ")
}

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
