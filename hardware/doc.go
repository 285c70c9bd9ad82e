// Package hardware is cube's accelerator catalogue and the one place that
// changes a pod template for hardware.
//
// A Profile is a value describing a card (NVIDIA T4 to B200, Ascend 910B1
// to 910B4 and 310P3) or a CPU-only node type: memory, bandwidth, dense
// TFLOPS, MIG table, vNPU templates, the node labels that select it and
// its resource name under a device-plugin Flavour. A Fabric (InfiniBand,
// RoCE, TCP) is the network between pods. Apply writes a Placement into a
// pod template:
//
//	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}}}
//	errs := hardware.Apply(&tmpl, "main", hardware.Placement{
//		Profile: hardware.H100, Count: 8,
//		Fabric:  hardware.InfiniBand(hardware.HCAs("mlx5_0", "mlx5_1")),
//	}, field.NewPath("spec", "template"))
//
// Numbers marked unverified in the reference (Ascend TFLOPS and bandwidth,
// some GPU product labels, the 7g SM counts) are defaults: copy the
// profile and change the field, or use the With methods.
//
// ReadInventory and InventoryFromNodes read a cluster's nodes into a typed
// inventory of accelerators per node.
package hardware
