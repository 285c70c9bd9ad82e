// Package ops is cube's operations desk: who used which accelerators and
// for how long, how busy those accelerators really were, what sits idle,
// and leases of accelerators to tenants with the charges they run up.
//
// Usage counts device-hours per tenant (namespace), release and kind (the
// cube.dev labels every cube object carries) and accelerator, from the
// pods' resource requests and lifetimes: whole devices count one per
// device, MIG instances and HAMi/Volcano slices and Ascend vNPUs the share
// vgpu.RequestShare reads (the share the packing planner sizes them by).
// Usage writes CSV and a table a person reads.
//
//	u, err := ops.ReadUsage(ctx, kube, from, to, nil)
//	_ = u.WriteTable(os.Stdout)
//
// Metrics reads accelerator utilisation from Prometheus (NVIDIA's DCGM
// exporter, HAMi's vGPU monitor, Huawei's npu-exporter), joined to the pods
// of releases; Idle applies policies such as "serving pods under 15% for
// two days" and Act scales down or stops what they find, as a dry run
// unless told to execute.
//
// Lease builds a coordination.k8s.io Lease of accelerators to a tenant for
// a period; Enforcer stops the leased workload when the lease expires, and
// Statement prices a tenant's usage.
//
// Edge placement (KubeEdge) is a placement option of the pod settings,
// hardware.Edge, not of this package.
package ops
