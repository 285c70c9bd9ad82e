package vgpu_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// FuzzSlice feeds arbitrary memory quantities, core percentages, MIG
// profile names and template names through the specs: nothing panics, a
// spec either validates or says why, and what validates renders within the
// card.
func FuzzSlice(f *testing.F) {
	for _, seed := range []struct {
		mem      string
		cores    int
		mig, tpl string
	}{
		{"10Gi", 30, "1g.10gb", "vir05_1c_16g"},
		{"3000M", 100, "7g.80gb", "vir10_3c_32g"},
		{"80Gi", 1, "1g.10gb+me", "vir04_4c_dvpp"},
		{"0", 0, "", ""},
		{"-5Gi", -1, "0g.0gb", "vir"},
		{"1e100", 101, "99999g.1gb", "vir05_1c_16g_m_nm"},
		{"0.5Gi", 50, "3g.40gb", "vir10_3c_16g_nm"},
		{"  12Gi ", 7, "4g.40gb", "vir02_1c"},
		{"9223372036854775807", 20, "2g.20gb", "vir01"},
	} {
		f.Add(seed.mem, seed.cores, seed.mig, seed.tpl)
	}
	cards := []hardware.Profile{hardware.A100_80G, hardware.T4, hardware.Ascend910B3, hardware.Ascend310P3,
		hardware.HygonK100, hardware.CambriconMLU370, hardware.KunlunxinP800, hardware.KunlunxinR200, hardware.MetaXC500,
		hardware.MooreThreadsS4000, hardware.EnflameS60, hardware.IluvatarBIV150}
	f.Fuzz(func(t *testing.T, mem string, cores int, mig, tpl string) {
		for _, card := range cards {
			for _, backend := range []vgpu.Backend{vgpu.HAMi, vgpu.Volcano, vgpu.HuaweiStatic, ""} {
				s := vgpu.Slice(card).Memory(mem).Cores(cores).Backend(backend)
				r, errs := vgpuspec.Of(s).Request(specPath)
				if len(errs) > 0 {
					assert.Zero(t, vgpuspec.Of(s).MemoryBytes())
					continue
				}
				require.NotEmpty(t, r.Resources)
				q, err := resource.ParseQuantity(strings.TrimSpace(mem))
				require.NoError(t, err, "accepted memory %q must parse", mem)
				assert.Positive(t, q.Sign())
				assert.LessOrEqual(t, q.Value(), card.MemoryBytes)
				assert.True(t, cores >= 1 && cores <= 100, "accepted cores %d", cores)
				assert.LessOrEqual(t, vgpuspec.Of(s).MemoryBytes(), card.MemoryBytes)
				for _, v := range r.Resources {
					assert.Positive(t, v)
				}
			}
			// HAMi's memory-only slices of the other vendors: what is
			// accepted fits the card in the resource's own unit.
			if sl, ok := card.HAMiSlicing(); ok {
				s := vgpu.Slice(card).Memory(mem)
				if r, errs := vgpuspec.Of(s).Request(specPath); len(errs) == 0 {
					units := r.Resources[sl.Memory]
					assert.Positive(t, units)
					assert.LessOrEqual(t, units*sl.MemoryUnitMiB<<20, card.MemoryBytes)
					assert.Equal(t, units*sl.MemoryUnitMiB<<20, vgpuspec.Of(s).MemoryBytes())
				} else {
					assert.Zero(t, vgpuspec.Of(s).MemoryBytes())
				}
			}
			m := vgpu.MIG(card, mig)
			if errs := vgpuspec.Of(m).Validate(specPath); len(errs) == 0 {
				_, ok := card.MIGProfile(mig)
				assert.True(t, ok, "accepted MIG %q on %s", mig, card.Name)
				c, _, _, err := vgpu.ParseMIGProfile(mig)
				require.NoError(t, err)
				assert.LessOrEqual(t, c, hardware.MIGComputeSlices)
			}
			v := vgpu.VNPU(card, tpl)
			if errs := vgpuspec.Of(v).Validate(specPath); len(errs) == 0 {
				got, ok := card.VNPUTemplate(tpl)
				require.True(t, ok)
				parsed, err := vgpu.ParseTemplate(tpl)
				require.NoError(t, err)
				assert.Equal(t, got.AICores, parsed.AICores)
				assert.LessOrEqual(t, vgpuspec.Of(v).MemoryBytes(), card.MemoryBytes)
			}
		}
		if parsed, err := vgpu.ParseTemplate(tpl); err == nil {
			assert.Positive(t, parsed.AICores)
			assert.True(t, strings.HasPrefix(parsed.Name, "vir"))
			assert.True(t, strings.EqualFold(strings.TrimSpace(tpl), parsed.Name))
		}
	})
}
