// Package vgpu describes fractional accelerators and packs them onto
// devices.
//
// A Spec is a share of a device: a slice sized by memory and compute
// (HAMi's nvidia.com/gpumem and gpucores, or Volcano's volcano.sh/vgpu-*),
// a MIG instance (mixed strategy nvidia.com/mig-1g.10gb or the single
// strategy's nvidia.com/gpu with the MIG product selector), an Ascend vNPU
// template (Huawei's static huawei.com/Ascend910-5c.1cpu.16g or HAMi's
// huawei.com/Ascend910B3 with -memory, rounded up to the smallest template
// that fits as HAMi does), HAMi's slices of the other domestic
// accelerators under their own names and units (hygon.com/dcunum, dcumem
// in MiB, dcucores; cambricon.com/vmlu with vmemory in 256 MiB units;
// kunlunxin.com/vxpu with vxpu-memory rounded up to a quarter, half or
// whole P800; metax-tech.com/sgpu with vmemory in GiB; mthreads.com/vgpu
// with sgpu-memory in 512 MiB steps and sgpu-core out of 16;
// enflame.com/gcu-memory and gcu-core; iluvatar.ai/<chip>-vgpu with vMem in
// 256 MiB units — see hardware.HAMiSlicing and hardware.HAMiCommit), or
// whole devices. Constructors take the
// hardware profile; methods chain and never fail. A workload's pod takes a
// Spec with its Slice setting, and its Objects renders the requests and
// reports every problem of the Spec with field paths:
//
//	s := vgpu.Slice(hardware.A100_80G).Memory("10Gi").Cores(30)
//	job := train.PyTorch("ft").Image("pytorch:2.4").Slice(s)
//
// Under a DRA flavour of the profile (hardware.NVIDIADRA, HAMiDRA) a Spec
// renders as a device claim instead of extended resources: whole devices
// of the driver's GPU class, a MIG instance of NVIDIA's mig.nvidia.com
// class selected by its profile, a slice as HAMi's consumable memory and
// cores. A slice under NVIDIA's driver, a MIG instance under HAMi's, a MIG
// strategy or a Volcano backend are errors: the DRA driver shares devices
// itself.
//
// Pack assigns demands to the devices of a hardware.Inventory (read from
// Nodes, or from the ResourceSlices DRA drivers publish with
// hardware.InventoryFromResourceSlices) with a
// Policy: WholeDevice, FirstFit, HAMi-style Binpack and Spread, or this
// package's Planner. Every policy respects memory and compute of slices,
// HAMi's shares per device and MIG placement geometry (an instance occupies
// fixed memory slices out of 8 and compute slices out of 7, so not every
// mix fits). The Planner places whole devices and MIG instances largest
// first (MIG instances where they keep aligned blocks free), then fills
// devices one at a time with shares in arrival order, topping each off
// with the shares whose size best matches the room left, and finally
// empties lightly used devices where it can. When the devices cannot hold
// every demand it also tries arrival order and smallest first and keeps the
// run that places most. A Plan reports assignments, the reasons for what
// could not be placed, per-device memory and compute, utilisation, stranded
// memory and the lower bound; Compare runs every policy; WriteSVG draws a
// plan. SyntheticTrace is the seeded generator behind the package
// benchmark (see testdata/benchmark.golden).
package vgpu
