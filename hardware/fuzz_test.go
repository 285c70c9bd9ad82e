package hardware_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// applyInput is one fuzzed placement: a catalogue profile by index under a
// flavour, a device count, a fabric kind with options, and /dev/shm.
type applyInput struct {
	which, count              int
	kind                      uint8
	flavour, hca, ifname, gdr string
	gid                       int
	debug                     string
	timeoutSec, buffMB        int
	shm, rdma                 string
}

var applySeeds = []applyInput{
	{0, 8, 0, "", "mlx5_0", "eth0", "PHB", 3, "WARN", 600, 512, "16Gi", "rdma/rdma_shared_device_a"},
	{14, 1, 2, "hami", "", "=ens1f0", "SYS", -1, "INFO", 0, 0, "", ""},
	{20, 9, 3, "vendor-device-plugin", "^mlx5_2", "", "bogus", 5, "TRACE", 7300, -1, "-1Gi", "nvidia.com/mlnxnics"},
	{27, 0, 1, "nvidia-mig-mixed", "", "", "", 0, "", 120, 1, "1e3", ""},
	{15, 4, 3, "", "", "eth0", "", 0, "", 0, 0, "", ""},
	{22, 2, 2, "hami", "", "ib0", "", 0, "", 0, 0, "8Gi", ""},
}

// placement builds the input's placement from profiles.
func (in applyInput) placement(profiles []hardware.Profile) hardware.Placement {
	p := profiles[((in.which%len(profiles))+len(profiles))%len(profiles)]
	if in.flavour != "" {
		p = p.Plugin(hardware.Flavour(in.flavour))
	}
	var opts []hardware.FabricOption
	if in.hca != "" {
		opts = append(opts, hardware.HCAs(in.hca))
	}
	if in.ifname != "" {
		opts = append(opts, hardware.SocketInterface(in.ifname))
	}
	if in.gdr != "" {
		opts = append(opts, hardware.GDRLevel(in.gdr))
	}
	if in.gid != 0 {
		opts = append(opts, hardware.GIDIndex(in.gid))
	}
	if in.debug != "" {
		opts = append(opts, hardware.NCCLDebug(in.debug))
	}
	if in.timeoutSec != 0 {
		opts = append(opts, hardware.HCCLConnectTimeout(time.Duration(in.timeoutSec)*time.Second))
	}
	if in.buffMB != 0 {
		opts = append(opts, hardware.HCCLBufferSize(in.buffMB))
	}
	if in.rdma != "" {
		opts = append(opts, hardware.RDMASharedDevice(corev1.ResourceName(in.rdma)))
	}
	var fabric hardware.Fabric
	switch in.kind % 4 {
	case 1:
		fabric = hardware.TCP(opts...)
	case 2:
		fabric = hardware.InfiniBand(opts...)
	case 3:
		fabric = hardware.RoCE(opts...)
	}
	placement := hardware.Placement{Profile: p, Accelerators: in.count, Fabric: fabric}
	if q, err := resource.ParseQuantity(in.shm); err == nil {
		placement.SharedMemory = q
	}
	return placement
}

// checkApply applies the input and checks what every result must hold;
// it returns the template and whether Apply accepted the placement.
func checkApply(t *testing.T, in applyInput, profiles []hardware.Profile) (corev1.PodTemplateSpec, bool) {
	pl := in.placement(profiles)
	p := pl.Profile
	tmpl := baseTemplate()
	errs := hardware.Apply(&tmpl, "main", pl, tmplPath)
	if len(errs) > 0 {
		assert.Equal(t, baseTemplate(), tmpl, "a rejected placement leaves the template untouched")
		for _, e := range errs {
			assert.NotEmpty(t, e.Field)
			assert.NotEqual(t, field.ErrorTypeInternal, e.Type)
		}
		return tmpl, false
	}
	c := tmpl.Spec.Containers[0]
	for name, q := range c.Resources.Limits {
		req := c.Resources.Requests[name]
		assert.True(t, q.Equal(req), "%s requests equal limits", name)
	}
	if pl.Accelerators > 0 {
		require.True(t, p.Accelerated())
		got := c.Resources.Limits[p.ResourceName]
		assert.Equal(t, int64(pl.Accelerators), got.Value())
		assert.LessOrEqual(t, pl.Accelerators, p.MaxPerNode)
	} else if p.ResourceName != "" {
		assert.NotContains(t, c.Resources.Limits, p.ResourceName)
	}
	if pl.Fabric.RDMA() {
		assert.True(t, p.Accelerated(), "RDMA only with accelerators")
	}
	for k, v := range p.NodeLabels() {
		if k != hardware.LabelGPUProduct || p.Flavour != hardware.MIGSingle {
			assert.Equal(t, v, tmpl.Spec.NodeSelector[k])
		}
	}
	return tmpl, true
}

// FuzzApply drives Apply with every catalogue profile under a fuzzed
// flavour, device count, fabric kind, fabric options and shared memory:
// nothing panics, a rejected placement leaves the template untouched with
// field paths on every error, and an accepted one requests exactly its
// devices with requests equal to limits. TestApplyInputsOnAPIServer
// creates the accepted shapes on the API server.
func FuzzApply(f *testing.F) {
	for _, s := range applySeeds {
		f.Add(s.which, s.count, s.kind, s.flavour, s.hca, s.ifname, s.gdr, s.gid, s.debug, s.timeoutSec, s.buffMB, s.shm, s.rdma)
	}
	profiles := hardware.Catalogue()
	f.Fuzz(func(t *testing.T, which, count int, kind uint8, flavour, hca, ifname, gdr string, gid int, debug string,
		timeoutSec, buffMB int, shm, rdma string) {
		checkApply(t, applyInput{which, count, kind, flavour, hca, ifname, gdr, gid, debug, timeoutSec, buffMB, shm, rdma}, profiles)
	})
}

// TestApplyInputsOnAPIServer runs the fuzz seeds and every profile × fabric
// kind × flavour with the seeds' options through checkApply, and creates
// each accepted template as a Pod with strict validation: what Apply
// accepts, the API server accepts.
func TestApplyInputsOnAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	profiles := hardware.Catalogue()
	inputs := append([]applyInput(nil), applySeeds...)
	for i := range profiles {
		for kind := uint8(0); kind < 4; kind++ {
			for _, flavour := range []string{"", "hami"} {
				inputs = append(inputs, applyInput{which: i, count: 1, kind: kind, flavour: flavour, ifname: "eth0", shm: "2Gi"})
			}
		}
	}
	accepted := 0
	for i, in := range inputs {
		tmpl, ok := checkApply(t, in, profiles)
		if !ok {
			continue
		}
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("input-%03d", i), Labels: tmpl.Labels, Annotations: tmpl.Annotations},
			Spec:       tmpl.Spec,
		}
		require.NoError(t, env.CreateStrict(t.Context(), pod), "%+v", in)
		accepted++
	}
	assert.Greater(t, accepted, len(profiles)*4, "most profile × fabric shapes are accepted")
}
