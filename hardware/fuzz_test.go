package hardware_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube/hardware"
)

// FuzzApply drives Apply with every catalogue profile under a fuzzed
// flavour, device count, fabric kind, fabric options and shared memory:
// nothing panics, a rejected placement leaves the template untouched, and
// an accepted one requests exactly its devices with requests equal to
// limits. TestApplyGoldenOnAPIServer applies the accepted shapes to the
// API server.
func FuzzApply(f *testing.F) {
	f.Add(0, 8, uint8(0), "", "mlx5_0", "eth0", "PHB", 3, "WARN", 600, 512, "16Gi", "rdma/rdma_shared_device_a")
	f.Add(14, 1, uint8(2), "hami", "", "=ens1f0", "SYS", -1, "INFO", 0, 0, "", "")
	f.Add(20, 9, uint8(3), "vendor-device-plugin", "^mlx5_2", "", "bogus", 5, "TRACE", 7300, -1, "-1Gi", "nvidia.com/mlnxnics")
	f.Add(27, 0, uint8(1), "nvidia-mig-mixed", "", "", "", 0, "", 120, 1, "1e3", "")
	profiles := hardware.Catalogue()
	f.Fuzz(func(t *testing.T, which, count int, kind uint8, flavour, hca, ifname, gdr string, gid int, debug string,
		timeoutSec, buffMB int, shm, rdma string) {
		p := profiles[((which%len(profiles))+len(profiles))%len(profiles)]
		if flavour != "" {
			p = p.WithFlavour(hardware.Flavour(flavour))
		}
		var opts []hardware.FabricOption
		if hca != "" {
			opts = append(opts, hardware.HCAs(hca))
		}
		if ifname != "" {
			opts = append(opts, hardware.SocketInterface(ifname))
		}
		if gdr != "" {
			opts = append(opts, hardware.GDRLevel(gdr))
		}
		if gid != 0 {
			opts = append(opts, hardware.GIDIndex(gid))
		}
		if debug != "" {
			opts = append(opts, hardware.NCCLDebug(debug))
		}
		if timeoutSec != 0 {
			opts = append(opts, hardware.HCCLConnectTimeout(time.Duration(timeoutSec)*time.Second))
		}
		if buffMB != 0 {
			opts = append(opts, hardware.HCCLBufferSize(buffMB))
		}
		if rdma != "" {
			opts = append(opts, hardware.RDMASharedDevice(corev1.ResourceName(rdma)))
		}
		var fabric hardware.Fabric
		switch kind % 4 {
		case 1:
			fabric = hardware.TCP(opts...)
		case 2:
			fabric = hardware.InfiniBand(opts...)
		case 3:
			fabric = hardware.RoCE(opts...)
		}
		placement := hardware.Placement{Profile: p, Count: count, Fabric: fabric}
		if q, err := resource.ParseQuantity(shm); err == nil {
			placement.SharedMemory = q
		}
		tmpl := baseTemplate()
		errs := hardware.Apply(&tmpl, "main", placement, tmplPath)
		if len(errs) > 0 {
			assert.Equal(t, baseTemplate(), tmpl, "a rejected placement leaves the template untouched")
			for _, e := range errs {
				assert.NotEmpty(t, e.Field)
			}
			return
		}
		c := tmpl.Spec.Containers[0]
		for name, q := range c.Resources.Limits {
			req := c.Resources.Requests[name]
			assert.True(t, q.Equal(req), "%s requests equal limits", name)
		}
		if count > 0 {
			require.True(t, p.Accelerated())
			got := c.Resources.Limits[p.ResourceName]
			assert.Equal(t, int64(count), got.Value())
			assert.LessOrEqual(t, count, p.MaxPerNode)
		} else {
			assert.NotContains(t, c.Resources.Limits, p.ResourceName)
		}
		if fabric.RDMA() {
			assert.True(t, p.Accelerated(), "RDMA only with accelerators")
		}
		for k, v := range p.NodeLabels() {
			if k != hardware.LabelGPUProduct || p.Flavour != hardware.MIGSingle {
				assert.Equal(t, v, tmpl.Spec.NodeSelector[k])
			}
		}
	})
}
