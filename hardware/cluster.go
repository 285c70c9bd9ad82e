package hardware

// Cluster is how a cluster runs its accelerators: which device plugin
// advertises NVIDIA GPUs, Ascend NPUs and the other vendors' devices, and
// whether Ascend nodes have the Ascend Docker Runtime. The zero value is
// the default: NVIDIA's device plugin, Huawei's device plugin, the vendors'
// own device plugins, the Ascend runtime present.
type Cluster struct {
	// NVIDIA is the flavour for NVIDIA profiles (default NVIDIADevicePlugin).
	NVIDIA Flavour
	// Ascend is the flavour for Ascend profiles (default HuaweiDevicePlugin).
	Ascend Flavour
	// NoAscendRuntime says Ascend nodes lack the Ascend Docker Runtime, so
	// pods mount the driver themselves.
	NoAscendRuntime bool
	// Others is the flavour for the other vendors' profiles (Hygon,
	// Cambricon, Kunlunxin, MetaX, Moore Threads, Enflame, Iluvatar):
	// VendorDevicePlugin by default, or HAMi.
	Others Flavour
}

// Profile returns p as this cluster advertises it.
func (c Cluster) Profile(p Profile) Profile {
	switch p.Vendor {
	case NVIDIA:
		f := c.NVIDIA
		if f == "" {
			f = NVIDIADevicePlugin
		}
		return p.Plugin(f)
	case Huawei:
		f := c.Ascend
		if f == "" {
			f = HuaweiDevicePlugin
		}
		return p.Plugin(f).AscendDockerRuntime(!c.NoAscendRuntime)
	case NoAccelerator:
		return p.clone()
	}
	f := c.Others
	if f == "" {
		f = VendorDevicePlugin
	}
	return p.Plugin(f)
}
