package vgpu_test

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/vgpu"
)

func TestWriteSVG(t *testing.T) {
	var inv hardware.Inventory
	inv.Add("a100", hardware.A100_80G, 3).Add("ascend", hardware.Ascend910B3, 1)
	ds := []vgpu.Demand{
		{Name: "chat", Spec: vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)},
		{Name: "nb<1>", Spec: vgpu.Slice(hardware.A100_80G).Memory("8Gi").Cores(10)},
		{Name: "embed", Spec: vgpu.MIG(hardware.A100_80G, "3g.40gb")},
		{Name: "rerank", Spec: vgpu.MIG(hardware.A100_80G, "2g.20gb")},
		{Name: "tiny", Spec: vgpu.MIG(hardware.A100_80G, "1g.10gb")},
		{Name: "train", Spec: vgpu.Whole(hardware.A100_80G, 1)},
		{Name: "npu", Spec: vgpu.VNPU(hardware.Ascend910B3, "vir10_3c_32g")},
	}
	plan, err := vgpu.Pack(inv, ds, vgpu.Planner)
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, plan.WriteSVG(&buf))
	golden.Assert(t, "plan.svg", buf.Bytes())

	// Well-formed XML, one row per device, one segment per slice.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	rects, titles := 0, 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok {
			switch se.Name.Local {
			case "rect":
				rects++
			case "title":
				titles++
			}
		}
	}
	assert.Equal(t, len(ds), titles)
	assert.Equal(t, 1+2*len(plan.Devices)+len(ds), rects, "background, bar and compute bar per device, a segment per slice")
	assert.Contains(t, buf.String(), "nb&lt;1&gt;")
	assert.True(t, strings.HasPrefix(buf.String(), `<svg xmlns="http://www.w3.org/2000/svg"`))

	assert.Error(t, plan.WriteSVG(failingWriter{}))
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }
