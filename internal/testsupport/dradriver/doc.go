// Package dradriver is a Dynamic Resource Allocation driver for the test
// cluster's one node: it runs the kubelet plugin of
// k8s.io/dynamic-resource-allocation (kubeletplugin) under the driver name
// of NVIDIA's DRA driver, gpu.nvidia.com, and publishes ResourceSlices of
// fake devices carrying the attributes and capacities that driver
// publishes (cmd/gpu-kubelet-plugin/deviceinfo.go at v25.8.1, see
// hardware.DriverNVIDIAGPU): four Tesla T4 GPUs, and one A100-SXM4-80GB
// that is partitionable into MIG devices through shared counters (one
// counter per memory slice, as a MIG instance occupies memory slices), so
// that the scheduler, not cube, decides which claim gets which device and a
// MIG device taken leaves the rest allocatable.
//
// It prepares claims on the kubelet's plugin API and returns a CDI device
// ID per allocated device. The node's containerd is 1.6, whose CRI plugin
// has no CDI (enable_cdi came with 1.7): the kubelet's CDI device IDs are
// dropped there, so nothing of the allocation reaches the container (no
// /dev node, no NVIDIA_VISIBLE_DEVICES). The allocation is visible in the
// ResourceClaim's status.allocation and in the pod's
// status.resourceClaimStatuses; Prepared lists what the kubelet prepared.
//
// HAMi's DRA driver's shared devices need the DRAConsumableCapacity feature
// (alpha in Kubernetes 1.37, off in the test cluster), so this driver does
// not publish them; hardware renders for them and the contract test checks
// the rendering against HAMi's published names.
//
//	d, err := dradriver.Start(ctx, client, "node-1", "/var/lib/kubelet")
//	defer d.Stop()
package dradriver
