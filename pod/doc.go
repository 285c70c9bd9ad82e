// Package pod holds the pod settings every cube workload shares, written
// once: image, command, env and secrets, volumes (PVC, hostPath, NFS,
// ConfigMap, Secret, /dev/shm), CPU and memory, the hardware profile, whole
// accelerators or a vGPU slice, the RDMA fabric, node placement, priority,
// service account, scheduler and Volcano queue.
//
// Every workload builder embeds Builder (or, without pods, Meta) by name,
// so `go doc` on a builder lists the field, and every setting documented
// here applies to it; the settings return the outer builder, so a notebook,
// a training job and a serving deployment chain the same way:
//
//	job := train.PyTorch("llama-sft").
//		Image("nvcr.io/nvidia/pytorch:24.05-py3").
//		On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).
//		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"}).
//		PVC("datasets", "/data")
//
// Settings record and never fail. The builder's Objects (or Build) renders
// fresh objects, applies the hardware through hardware.Apply and
// vgpu.Spec.Apply (the only code that writes device resources, selectors,
// NCCL/HCCL variables and mounts), and returns every problem with a field
// path: a negative Accelerators, a queue or priority class that cannot
// exist, a port out of range, a credential written in clear in Env (use
// EnvFromSecret with a SecretKeyRef instead).
//
// Builder and Meta have no exported fields or reads: what cube's own
// packages need to render the settings is internal to the module.
package pod
