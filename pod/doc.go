// Package pod holds the pod settings every cube workload shares, written
// once: image, command, env and secrets, volumes (PVC, hostPath, NFS,
// ConfigMap, Secret, /dev/shm), CPU and memory, the hardware profile, whole
// accelerators or a vGPU slice, the RDMA fabric, node placement, priority,
// service account, scheduler and Volcano queue.
//
// Builders embed Builder (or, without pods, Meta) by value and call Init
// from their constructor; the embedded methods return the outer builder, so
// a notebook, a training job and a serving deployment chain the same way:
//
//	job := train.PyTorch("llama-sft").
//		Image("nvcr.io/nvidia/pytorch:24.05-py3").
//		On(hardware.H100).GPUs(8).Fabric(hardware.InfiniBand()).
//		EnvFromSecret("HF_TOKEN", "hf", "token").
//		PVC("datasets", "/data")
//
// Methods record and never fail. Template renders a fresh pod template,
// applies the hardware through hardware.Apply and vgpu.Spec.Apply (the only
// code that writes device resources, selectors, NCCL/HCCL variables and
// mounts), and returns every problem with a field path. Problems found
// while chaining (a negative GPUs, a queue or priority class that cannot
// exist, a port out of range, a credential written in clear in Env — see
// SecretLiteral) carry the setting's name; a workload that renders several
// templates from one Builder asks Template to omit them
// (TemplateOptions.OmitSettingErrors) and reports SettingErrors once.
package pod
