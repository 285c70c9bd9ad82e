package hardware

// Cluster is how a cluster runs its accelerators: which device plugin
// advertises NVIDIA GPUs and Ascend NPUs, and whether Ascend nodes have the
// Ascend Docker Runtime. The zero value is the default: NVIDIA's device
// plugin, Huawei's device plugin, the Ascend runtime present.
type Cluster struct {
	// NVIDIA is the flavour for NVIDIA profiles (default NVIDIADevicePlugin).
	NVIDIA Flavour
	// Ascend is the flavour for Ascend profiles (default HuaweiDevicePlugin).
	Ascend Flavour
	// NoAscendRuntime says Ascend nodes lack the Ascend Docker Runtime, so
	// pods mount the driver themselves.
	NoAscendRuntime bool
}

// Profile returns p as this cluster advertises it.
func (c Cluster) Profile(p Profile) Profile {
	switch p.Vendor {
	case NVIDIA:
		f := c.NVIDIA
		if f == "" {
			f = NVIDIADevicePlugin
		}
		return p.WithFlavour(f)
	case Huawei:
		f := c.Ascend
		if f == "" {
			f = HuaweiDevicePlugin
		}
		return p.WithFlavour(f).WithAscendRuntime(!c.NoAscendRuntime)
	}
	return p.clone()
}
