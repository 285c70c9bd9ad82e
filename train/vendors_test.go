package train_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
)

// otherVendors are the catalogue's accelerators that are neither NVIDIA nor
// Ascend (Hygon, Cambricon, Kunlunxin, MetaX, Moore Threads, Enflame,
// Iluvatar).
func otherVendors() []hardware.Profile {
	var out []hardware.Profile
	for _, p := range hardware.Catalogue() {
		if p.Accelerated() && p.Vendor != hardware.NVIDIA && p.Vendor != hardware.Huawei {
			out = append(out, p)
		}
	}
	return out
}

// TestEveryBuilderOnTheOtherVendors is issue 19's one-argument swap: every
// training builder of the matrix, rendered with the h100-ib setup's
// settings but On another vendor's profile, validates, carries that
// vendor's resource, selector and collective variables instead of
// NVIDIA's, and is accepted by the real API server with strict field
// validation.
func TestEveryBuilderOnTheOtherVendors(t *testing.T) {
	c, _, _ := newClient(t)
	for _, p := range otherVendors() {
		s := setup{name: strings.ToLower(p.Name), on: func(b podSettings) {
			b.on(p, 8, hardware.RoCE(hardware.SocketInterface("eth0")), "96", "1600Gi")
		}}
		for _, bc := range builderCases {
			name := bc.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				w := bc.build(name, s)
				var buf bytes.Buffer
				require.NoError(t, cube.Render(&buf, w))
				out := buf.String()
				assert.Contains(t, out, string(p.ResourceName)+`: "8"`)
				assert.Contains(t, out, "accelerator: "+p.NodeLabels()[hardware.LabelAccelerator])
				assert.NotContains(t, out, "nvidia.com/gpu")
				assert.Contains(t, out, p.Collective().SocketInterface)
				if !strings.HasPrefix(p.Collective().SocketInterface, "NCCL_") {
					assert.NotContains(t, out, "NCCL_SOCKET_IFNAME")
				}
				_, err := c.Apply(t.Context(), w)
				require.NoError(t, err)
			})
		}
	}
}
