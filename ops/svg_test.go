package ops_test

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/ops"
)

func TestWriteUtilisationSVG(t *testing.T) {
	var idle, busy []ops.Sample
	for i := range 60 {
		at := t0.Add(time.Duration(i) * time.Minute)
		idle = append(idle, ops.Sample{At: at, Value: 2})
		busy = append(busy, ops.Sample{At: at, Value: float64(50 + i%40)})
	}
	series := []ops.DeviceSeries{
		{Exporter: "dcgm", Namespace: "team-a", Pod: "qwen-0", Device: "GPU-0000-<&>", Utilisation: idle},
		{Exporter: "dcgm", Namespace: "team-a", Pod: "chat-0", Device: "GPU-1", Utilisation: busy},
	}
	var out bytes.Buffer
	require.NoError(t, ops.WriteUtilisationSVG(&out, series, t0, t0.Add(time.Hour), 15))
	svg := out.String()
	// Well-formed XML.
	d := xml.NewDecoder(strings.NewReader(svg))
	rects := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "rect" {
			rects++
		}
	}
	// Background, two row backgrounds, and one cell per bucket with samples
	// (60 minutes over 130 buckets: 60 buckets per row).
	assert.Equal(t, 1+2+2*60, rects)
	assert.Contains(t, svg, "2 devices, 1 idle (peak under 15%)")
	assert.Contains(t, svg, "mean   2%  peak   2%  idle")
	assert.Contains(t, svg, "GPU-0000-&lt;&amp;&gt;")
	assert.Contains(t, svg, `fill="hsl(54,85%,88%)"`, "idle is pale")
	assert.ErrorContains(t, ops.WriteUtilisationSVG(&out, nil, t0, t0, 15), "to: must be after from")
}
