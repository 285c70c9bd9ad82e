// Package hardware is cube's accelerator catalogue and the one place that
// changes a pod template for hardware.
//
// A Profile is a value describing a card or a CPU-only node type: memory,
// memory bandwidth, dense BF16/FP16 TFLOPS, interconnect, how many a node
// holds, its MIG table (with placement geometry), its Ascend vNPU
// templates, the node labels that select it and its resource name under a
// device-plugin Flavour. The catalogue has NVIDIA T4, A10, L4, L40S,
// A100 40GB and 80GB, H100 SXM, H200 and B200; Ascend 910B1–910B4 and
// 310P3; Hygon DCU K100-AI and Z100, Cambricon MLU370-X8 and MLU590,
// Kunlunxin P800 and R200, MetaX C500, Moore Threads MTT S4000, Enflame
// S60 and Iluvatar BI-V150 and MR-V100; and CPU (amd64), CPUArm64, Kunpeng
// and HygonCPU. Lookup finds a profile by name, ignoring case.
//
// Profiles are values that share nothing: the maps and slices inside one
// (node labels, tolerations, MIG table, vNPU templates, host mounts) are
// reached through accessors that return copies and changed through With
// methods that return a new Profile, so a caller changing its copy of
// H100 never changes what a later job gets.
//
//	h100 := hardware.H100                                // NVIDIA device plugin: nvidia.com/gpu
//	mig := hardware.A100_80G.Plugin(hardware.MIGMixed)
//	npu := hardware.Ascend910B3                         // Huawei device plugin: huawei.com/Ascend910
//	hami := hardware.Ascend910B3.Plugin(hardware.HAMi) // huawei.com/Ascend910B3
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
// from the allocation annotation (which only Volcano writes: the pod
// templates of cube's builders drop it, with DropAnnotationVisibleDevices,
// where another scheduler places the pods), the Ascend driver host paths when the
// Ascend Docker Runtime is absent, a memory-backed /dev/shm, IPC_LOCK for
// RDMA and the Multus annotation. It checks the placement first (too many
// devices for the node type, MIG on a card without MIG, RDMA without a
// resource, NCCL settings on Ascend…) and returns every problem with field
// paths, leaving the template untouched on error:
//
//	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
//	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
//		Profile: hardware.H100, GPUs: 8,
//		Fabric:  hardware.InfiniBand(hardware.HCAs("mlx5_0", "mlx5_1")),
//	}, field.NewPath("spec", "template"))
//
// Fractional devices (package vgpu) render through ApplyDevices after Apply
// with Count 0, so that node selection, environment and mounts still come
// from the profile.
//
// # The other domestic accelerators
//
// The profiles of the vendors other than NVIDIA and Huawei render for the
// vendor's own device plugin (VendorDevicePlugin, the default) or for HAMi
// (Plugin(HAMi), or Cluster.Others). Each selects its nodes by the
// accelerator label, valued <vendor>-<product> (cube's convention, the key
// Huawei's guide has administrators set for Ascend; add the vendor's own
// labels with SelectNodes), tolerates a NoSchedule taint keyed by the
// plugin resource, and sets the collective library's variables for a
// Fabric (Collective; UseCollective renames them). InfiniBand and RoCE add
// the RDMA resource, IPC_LOCK and Multus networks as on NVIDIA. HAMi slices
// of these devices are package vgpu's (HAMiSlicing gives the names).
//
//	profile      device plugin        HAMi whole / slice count      memory   collective  notes
//	DCU-K100-AI  hygon.com/dcu        hygon.com/dcunum              64 GiB   RCCL        mounts /opt/hyhal
//	DCU-Z100     hygon.com/dcu        hygon.com/dcunum              32 GiB   RCCL        mounts /opt/hyhal
//	MLU370-X8    cambricon.com/mlu    cambricon.com/vmlu            48 GiB   CNCL        614.4 GB/s, 96 TFLOPS
//	MLU590       cambricon.com/mlu    cambricon.com/vmlu            80 GiB   CNCL
//	P800         kunlunxin.com/xpu    kunlunxin.com/xpu / vxpu      96 GiB   BKCL        vXPU ¼, ½, whole
//	R200         kunlunxin.com/xpu    kunlunxin.com/xpu (no vXPU)   32 GiB   BKCL        512 GB/s, FP16 128
//	C500         metax-tech.com/gpu   metax-tech.com/gpu / sgpu     64 GiB   MCCL        1.8 TB/s, 280 TFLOPS
//	MTT-S4000    mthreads.com/gpu     mthreads.com/vgpu             48 GiB   MCCL        768 GB/s, 100 TFLOPS
//	S60          enflame.com/gcu      enflame.com/gcu / (none)      48 GiB   ECCL        slice = one DRS profile
//	BI-V150      iluvatar.com/gpu     iluvatar.ai/BI-V150-vgpu      64 GiB   NCCL names  CoreX
//	MR-V100      iluvatar.com/gpu     iluvatar.ai/MR-V100-vgpu      32 GiB   NCCL names  CoreX
//
// HAMi's names and units are read from HAMi's device code at HAMiCommit
// (pkg/device/{hygon,cambricon,kunlun,metax,mthreads,enflame,iluvatar} and
// the chart's device-configmap.yaml and values.yaml). The device-plugin
// names: cambricon.com/mlu from cambricon-k8s-device-plugin
// (pkg/mlu/server.go); kunlunxin.com/xpu, metax-tech.com/gpu and
// enflame.com/gcu from HAMi's configuration of the vendors' plugins;
// hygon.com/dcu and mthreads.com/gpu from HAMi's Hygon guide, Moore
// Threads' KUAE guide and GPUStack's runtime map; iluvatar.com/gpu from
// GPUStack's map (older ix-device-plugin releases say iluvatar.ai/gpu).
// Verified from HAMi's code: the P800's 96 GiB (KunlunMaxMemory) and the
// S4000's 48 GiB (96 × 512 MiB). Unverified, defaults to override on a
// copy: every other memory, bandwidth and TFLOPS figure (zero where the
// team found none), MaxPerNode 8, the accelerator label values, the
// iluvatar.com/gpu name, the Hygon /opt/hyhal mount (MountHost), the
// CNCL, BKCL, MCCL and ECCL variable names (only those seen in vendors'
// launch scripts are set; UseCollective), NCCL names for Iluvatar CoreX,
// and the vendor images of Images (Hygon's SourceFind PyTorch and vLLM,
// MetaX's vLLM, Iluvatar's CoreX base; UseImages). Image reports a clear
// error where no image of a framework is known for a profile.
//
// A CPU profile has no collective library: an InfiniBand or RoCE fabric,
// or NCCL/HCCL options, on it are errors.
//
// # Dynamic Resource Allocation
//
// The flavours NVIDIADRA (NVIDIA's k8s-dra-driver-gpu) and HAMiDRA (HAMi's
// k8s-dra-driver) are the one setting that moves a profile from extended
// resources to resource.k8s.io/v1 claims; set it on the profile
// (hardware.H100.Plugin(hardware.NVIDIADRA)) or for a whole cluster
// (Cluster.NVIDIA). A pod then refers to a claim (ClaimRef: a
// ResourceClaimTemplate per pod, or one shared ResourceClaim) instead of
// requesting nvidia.com/gpu, and DeviceClaim renders what that claim asks:
// the driver's DeviceClass (gpu.nvidia.com, mig.nvidia.com,
// hami-core-gpu.project-hami.io), a CEL selector on the productName
// attribute, for MIG the profile attribute, for HAMi slices the memory and
// cores capacities. The names are read from the drivers' source at
// NVIDIA v25.8.1 and HAMi v0.1.0 (see DriverNVIDIAGPU). The workload
// builders render the claim's object beside their own (pod.Builder's
// SharedClaim chooses the shared claim); the training-operator's jobs
// refuse a DRA flavour, because its v1.8.1 CRDs predate
// resource.k8s.io/v1. InventoryFromResourceSlices reads the GPUs DRA
// drivers publish into an Inventory for the planner.
//
// InventoryFromNodes reads a cluster's Nodes (allocatable
// resources, GPU Feature Discovery and Ascend labels, MIG counts from
// nvidia.com/mig-<profile>.count, the other vendors' accelerator labels
// and device-plugin or HAMi resources) into an Inventory of accelerators
// per node, matched to catalogue profiles; package hardware/nodes lists
// them through a client.
//
// ApplyEdge (and pod.Builder.Edge) places a pod on KubeEdge edge nodes: the
// node-role.kubernetes.io/edge selector, tolerations for edge taints and for
// nodes that lose the cloud link, host networking, and resources checked
// against the edge device. Edge documents what KubeEdge needs from the
// cluster.
//
// Sources: NVIDIA k8s-device-plugin and GPU Feature Discovery, the GPU
// Operator's MIG configuration and the MIG user guide, NVIDIA datasheets,
// Huawei MindCluster/MindX DL and CANN references, HAMi, NCCL, KubeEdge. Values the
// team could not confirm from a primary source are defaults to override
// (copy the Profile and change the field, or call the methods that
// return a changed copy, such as PerNode and SelectNodes): the
// Ascend TFLOPS and bandwidth figures, 910B1's AI cores, MaxPerNode of the
// 310P3, the GPU product label values other than T4's and H100's, the 7g
// SM counts and the Hygon CPU-vendor label; for the other vendors see the
// table above.
package hardware
