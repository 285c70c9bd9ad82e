package serve_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/serve"
)

// TestVLLMOnTheOtherVendors serves one model on each of the other
// vendors' profiles (Hygon, Cambricon, Kunlunxin, MetaX, Moore Threads,
// Enflame, Iluvatar), on one node and on two, with the vendor's vLLM image
// where hardware knows one (a placeholder otherwise: without one serve
// refuses the devices, TestEnginesPickTheirImageForTheAccelerator), and
// applies each to the real API server with strict validation.
func TestVLLMOnTheOtherVendors(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, p := range hardware.Catalogue() {
		if !p.Accelerated() || p.Vendor == hardware.NVIDIA || p.Vendor == hardware.Huawei {
			continue
		}
		img, err := p.Image(hardware.FrameworkVLLM)
		if err != nil {
			img = "registry.example/vllm-" + strings.ToLower(string(p.Vendor)) + ":1"
		}
		for _, nodes := range []int{1, 2} {
			name := "qwen-" + strings.ToLower(p.Name)
			if nodes > 1 {
				name += "-multi"
			}
			t.Run(name, func(t *testing.T) {
				s := serve.VLLM(name, "Qwen/Qwen2.5-7B-Instruct").Image(img).On(p).Accelerators(4)
				if nodes > 1 {
					s = s.Nodes(nodes).TensorParallel(4).PipelineParallel(nodes).
						Fabric(hardware.RoCE(hardware.SocketInterface("eth0")))
				}
				var buf bytes.Buffer
				require.NoError(t, cube.Render(&buf, s))
				out := buf.String()
				assert.Contains(t, out, string(p.ResourceName)+`: "4"`)
				assert.Contains(t, out, "accelerator: "+p.NodeLabels()[hardware.LabelAccelerator])
				assert.Contains(t, out, "image: "+img)
				assert.NotContains(t, out, "nvidia.com/gpu")
				if nodes > 1 {
					assert.Contains(t, out, p.Collective().SocketInterface)
				}
				_, err := cl.Apply(t.Context(), s)
				require.NoError(t, err)
			})
		}
	}
}
