// Package hardware is cube's accelerator catalogue and the one place that
// changes a pod template for hardware.
//
// A Profile is a value describing a card or a CPU-only node type: memory,
// memory bandwidth, dense BF16/FP16 TFLOPS, interconnect, how many a node
// holds, its MIG table (with placement geometry), its Ascend vNPU
// templates, the node labels that select it and its resource name under a
// device-plugin Flavour. The catalogue has NVIDIA T4, A10, L4, L40S,
// A100 40GB and 80GB, H100 SXM, H200 and B200; Ascend 910B1–910B4 and
// 310P3; and CPU (amd64), CPUArm64, Kunpeng and Hygon.
//
//	h100 := hardware.H100                                // NVIDIA device plugin: nvidia.com/gpu
//	mig := hardware.A100_80G.WithFlavour(hardware.MIGMixed)
//	npu := hardware.Ascend910B3                         // Huawei device plugin: huawei.com/Ascend910
//	hami := hardware.Ascend910B3.WithFlavour(hardware.HAMi) // huawei.com/Ascend910B3
//
// A Fabric is the network the collective library uses between pods:
// InfiniBand, RoCE or TCP, with options for the RDMA resource (shared
// device plugin, default rdma/rdma_shared_device_a, or SR-IOV), Multus
// networks and NCCL or HCCL settings. Ascend 910B profiles know their NPUs
// carry their own RoCE ports (OnChipRoCE): a RoCE fabric on them sets HCCL
// variables only, and RDMA plugins, Multus or NCCL options are errors.
//
// Apply writes a Placement (profile, device count, fabric, /dev/shm size)
// into a pod template: devices as requests equal to limits, node
// selectors, tolerations, NCCL_* or HCCL_* variables (HCCL_IF_IP from the
// pod IP), the Ascend ring-controller.atlas label and ASCEND_VISIBLE_DEVICES
// from the allocation annotation, the Ascend driver host paths when the
// Ascend Docker Runtime is absent, a memory-backed /dev/shm, IPC_LOCK for
// RDMA and the Multus annotation. It checks the placement first (too many
// devices for the node type, MIG on a card without MIG, RDMA without a
// resource, NCCL settings on Ascend…) and returns every problem with field
// paths, leaving the template untouched on error:
//
//	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
//	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
//		Profile: hardware.H100, Count: 8,
//		Fabric:  hardware.InfiniBand(hardware.HCAs("mlx5_0", "mlx5_1")),
//	}, field.NewPath("spec", "template"))
//
// Fractional devices (package vgpu) render through ApplyDevices after Apply
// with Count 0, so that node selection, environment and mounts still come
// from the profile.
//
// ReadInventory and InventoryFromNodes read a cluster's Nodes (allocatable
// resources, GPU Feature Discovery and Ascend labels, MIG counts from
// nvidia.com/mig-<profile>.count) into an Inventory of accelerators per
// node, matched to catalogue profiles.
//
// Sources: NVIDIA k8s-device-plugin and GPU Feature Discovery, the GPU
// Operator's MIG configuration and the MIG user guide, NVIDIA datasheets,
// Huawei MindCluster/MindX DL and CANN references, HAMi, NCCL. Values the
// team could not confirm from a primary source are defaults to override
// (copy the Profile and change the field, or use the With methods): the
// Ascend TFLOPS and bandwidth figures, 910B1's AI cores, MaxPerNode of the
// 310P3, the GPU product label values other than T4's and H100's, the 7g
// SM counts and the Hygon CPU-vendor label.
package hardware
