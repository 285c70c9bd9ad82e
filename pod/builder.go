package pod

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/vgpu"
)

// Builder holds the pod settings every cube workload shares — image,
// command, env, secrets, volumes, resources, hardware profile, vGPU slice,
// fabric, placement, scheduler and queue — written once and embedded by
// every builder (notebooks, training replicas, pipeline steps, serving
// pods). Its methods are settings: each records what it is given, never
// fails, and returns the builder that embeds it, so chains stay fluent; the
// builder's Objects (or Build) validates them all and reports every problem
// with a field path. It embeds Meta, so the metadata settings (Namespace,
// Label, Annotation, PartOf) apply too.
//
// A builder lists it as an embedded field, and `go doc pod.Builder` shows
// what it adds to every workload:
//
//	type PyTorchJob struct {
//		pod.Builder[PyTorchJob]
//		…
//	}
type Builder[T any] struct {
	Meta[T]
}

// Image sets the container image.
func (b *Builder[T]) Image(image string) *T { return podspec.Of(&b.Handle).Image(image) }

// ImagePullPolicy sets the image pull policy.
func (b *Builder[T]) ImagePullPolicy(p corev1.PullPolicy) *T {
	return podspec.Of(&b.Handle).ImagePullPolicy(p)
}

// Command replaces the container's entrypoint.
func (b *Builder[T]) Command(cmd ...string) *T { return podspec.Of(&b.Handle).Command(cmd...) }

// Args replaces the container's arguments.
func (b *Builder[T]) Args(args ...string) *T { return podspec.Of(&b.Handle).Args(args...) }

// AddArgs appends arguments.
func (b *Builder[T]) AddArgs(args ...string) *T { return podspec.Of(&b.Handle).AddArgs(args...) }

// WorkingDir sets the container's working directory.
func (b *Builder[T]) WorkingDir(dir string) *T { return podspec.Of(&b.Handle).WorkingDir(dir) }

// Env sets an environment variable, replacing one of the same name. A
// literal that looks like a credential under a secret-named variable
// (SecretLiteral: HF_TOKEN=hf_…, OPENAI_API_KEY=sk-…) is refused, because
// the rendered objects would carry it in clear: use EnvFromSecret.
func (b *Builder[T]) Env(name, value string) *T { return podspec.Of(&b.Handle).Env(name, value) }

// EnvFromSecret sets an environment variable from a key of a Secret
// (secretKeyRef), so the value never appears in the rendered objects.
func (b *Builder[T]) EnvFromSecret(name string, ref SecretKeyRef) *T {
	return podspec.Of(&b.Handle).EnvFromSecret(name, ref.Name, ref.Key)
}

// EnvFromField sets an environment variable from a pod field (fieldRef),
// e.g. "status.podIP".
func (b *Builder[T]) EnvFromField(name, fieldPath string) *T {
	return podspec.Of(&b.Handle).EnvFromField(name, fieldPath)
}

// EnvFromSecretAll adds every key of a Secret as environment variables.
func (b *Builder[T]) EnvFromSecretAll(secret string) *T {
	return podspec.Of(&b.Handle).EnvFromSecretAll(secret)
}

// EnvFromConfigMap adds every key of a ConfigMap as environment variables.
func (b *Builder[T]) EnvFromConfigMap(configMap string) *T {
	return podspec.Of(&b.Handle).EnvFromConfigMap(configMap)
}

// CPU sets the CPU request and limit ("8", "500m").
func (b *Builder[T]) CPU(q string) *T { return podspec.Of(&b.Handle).CPU(q) }

// Memory sets the memory request and limit ("32Gi").
func (b *Builder[T]) Memory(q string) *T { return podspec.Of(&b.Handle).Memory(q) }

// Resource sets the request and limit of any resource.
func (b *Builder[T]) Resource(name corev1.ResourceName, q string) *T {
	return podspec.Of(&b.Handle).Resource(name, q)
}

// Request sets a request only (the limit stays as set, or unset).
func (b *Builder[T]) Request(name corev1.ResourceName, q string) *T {
	return podspec.Of(&b.Handle).Request(name, q)
}

// Limit sets a limit only.
func (b *Builder[T]) Limit(name corev1.ResourceName, q string) *T {
	return podspec.Of(&b.Handle).Limit(name, q)
}

// On selects the accelerator (or CPU) profile the pods run on. It decides
// resource names, node selectors, tolerations, mounts and the collective
// library's environment; the same builder moves from NVIDIA to Ascend by
// changing this one argument.
func (b *Builder[T]) On(p hardware.Profile) *T { return podspec.Of(&b.Handle).On(p) }

// Accelerators sets how many whole accelerators each pod gets (GPUs or NPUs, per
// the profile). Without On, NVIDIA H100 is not assumed: the count needs a
// profile and Template reports it missing.
func (b *Builder[T]) Accelerators(n int) *T { return podspec.Of(&b.Handle).Accelerators(n) }

// Slice gives each pod a fraction of an accelerator instead of whole ones
// (HAMi, MIG, Volcano vGPU or Ascend vNPU); it also sets the profile.
func (b *Builder[T]) Slice(s *vgpu.Spec) *T { return podspec.Of(&b.Handle).Slice(s) }

// Fabric sets the network the collective library uses between pods
// (hardware.InfiniBand, hardware.RoCE, hardware.TCP).
func (b *Builder[T]) Fabric(f hardware.Fabric) *T { return podspec.Of(&b.Handle).Fabric(f) }

// SharedMemory sizes /dev/shm (a memory-backed emptyDir), e.g. "16Gi".
func (b *Builder[T]) SharedMemory(size string) *T { return podspec.Of(&b.Handle).SharedMemory(size) }

// PVC mounts a PersistentVolumeClaim at mountPath.
func (b *Builder[T]) PVC(claim, mountPath string) *T {
	return podspec.Of(&b.Handle).PVC(claim, mountPath)
}

// PVCSubPath mounts a sub-path of a claim at mountPath.
func (b *Builder[T]) PVCSubPath(claim, subPath, mountPath string) *T {
	return podspec.Of(&b.Handle).PVCSubPath(claim, subPath, mountPath)
}

// HostPath mounts a directory of the node at mountPath.
func (b *Builder[T]) HostPath(hostPath, mountPath string) *T {
	return podspec.Of(&b.Handle).HostPath(hostPath, mountPath)
}

// NFS mounts an NFS export at mountPath.
func (b *Builder[T]) NFS(server, exportPath, mountPath string) *T {
	return podspec.Of(&b.Handle).NFS(server, exportPath, mountPath)
}

// ConfigMapVolume mounts a ConfigMap's keys as files under mountPath.
func (b *Builder[T]) ConfigMapVolume(configMap, mountPath string) *T {
	return podspec.Of(&b.Handle).ConfigMapVolume(configMap, mountPath)
}

// SecretVolume mounts a Secret's keys as files under mountPath, read-only.
func (b *Builder[T]) SecretVolume(secret, mountPath string) *T {
	return podspec.Of(&b.Handle).SecretVolume(secret, mountPath)
}

// EmptyDir mounts a scratch directory at mountPath.
func (b *Builder[T]) EmptyDir(name, mountPath string) *T {
	return podspec.Of(&b.Handle).EmptyDir(name, mountPath)
}

// AddVolume adds any volume, mounted at mountPath in the main container
// (an empty mountPath adds the volume without mounting it).
func (b *Builder[T]) AddVolume(v corev1.Volume, mountPath string) *T {
	return podspec.Of(&b.Handle).AddVolume(v, mountPath)
}

// NodeSelector adds a node selector.
func (b *Builder[T]) NodeSelector(key, value string) *T {
	return podspec.Of(&b.Handle).NodeSelector(key, value)
}

// AddToleration adds a toleration.
func (b *Builder[T]) AddToleration(t corev1.Toleration) *T {
	return podspec.Of(&b.Handle).AddToleration(t)
}

// Affinity replaces the pod affinity.
func (b *Builder[T]) Affinity(a *corev1.Affinity) *T { return podspec.Of(&b.Handle).Affinity(a) }

// PriorityClass sets the pod priority class.
func (b *Builder[T]) PriorityClass(name string) *T { return podspec.Of(&b.Handle).PriorityClass(name) }

// ServiceAccount sets the pod's service account.
func (b *Builder[T]) ServiceAccount(name string) *T {
	return podspec.Of(&b.Handle).ServiceAccount(name)
}

// ImagePullSecret adds an image pull secret.
func (b *Builder[T]) ImagePullSecret(name string) *T {
	return podspec.Of(&b.Handle).ImagePullSecret(name)
}

// Scheduler sets the scheduler name (e.g. "volcano", "hami-scheduler").
func (b *Builder[T]) Scheduler(name string) *T { return podspec.Of(&b.Handle).Scheduler(name) }

// Queue puts the pods in a Volcano queue; job builders also set it on the
// job's scheduling policy. A queue is a cluster-scoped Volcano object, so
// its name is a DNS-1123 subdomain, and Volcano refuses jobs in its root
// queue (pkg/webhooks/admission/jobs/validate/admit_job.go).
func (b *Builder[T]) Queue(name string) *T { return podspec.Of(&b.Handle).Queue(name) }

// LocalQueue puts the workload in Kueue's LocalQueue name of its
// namespace (a tenant with Queueing(tenant.Kueue) has one named after
// it): the label kueue.x-k8s.io/queue-name on its top-level objects.
// Kueue keeps the workload suspended until its ClusterQueue has quota for
// all of its pods and then admits it whole, never part of it. Queue is
// the same for Volcano.
func (b *Builder[T]) LocalQueue(name string) *T { return podspec.Of(&b.Handle).LocalQueue(name) }

// WorkloadPriority gives the workload Kueue's WorkloadPriorityClass name
// (one of the platform's tenant.Priorities): the label
// kueue.x-k8s.io/priority-class on its top-level objects. Kueue admits
// the queue's workloads in priority order and, within a tenant's
// ClusterQueue, preempts admitted ones of lower priority for it; unlike
// PriorityClass it is Kueue's alone, so kube-scheduler does not preempt
// pods for it. Unset, Kueue takes the pods' PriorityClass.
func (b *Builder[T]) WorkloadPriority(name string) *T {
	return podspec.Of(&b.Handle).WorkloadPriority(name)
}

// PodLabel adds a label to the pods only.
func (b *Builder[T]) PodLabel(key, value string) *T {
	return podspec.Of(&b.Handle).PodLabel(key, value)
}

// PodAnnotation adds an annotation to the pods only.
func (b *Builder[T]) PodAnnotation(key, value string) *T {
	return podspec.Of(&b.Handle).PodAnnotation(key, value)
}

// PodSecurityContext replaces the pod security context.
func (b *Builder[T]) PodSecurityContext(sc *corev1.PodSecurityContext) *T {
	return podspec.Of(&b.Handle).PodSecurityContext(sc)
}

// SecurityContext replaces the main container's security context.
func (b *Builder[T]) SecurityContext(sc *corev1.SecurityContext) *T {
	return podspec.Of(&b.Handle).SecurityContext(sc)
}

// Port exposes a named container port on the main container; Template
// reports a number outside 1-65535 or a name that is not an IANA service
// name (at most 15 lowercase letters, digits and '-').
func (b *Builder[T]) Port(name string, port int32) *T { return podspec.Of(&b.Handle).Port(name, port) }

// Edge places the pods on KubeEdge edge nodes (hardware.Edge: node
// selection, tolerations, host networking, resources checked against the
// edge device); the edge settings are applied after the hardware profile.
// It replaces an earlier Edge.
func (b *Builder[T]) Edge(e hardware.Edge) *T { return podspec.Of(&b.Handle).Edge(e) }

// SharedClaim makes the pods of the workload share one ResourceClaim (one
// set of devices, on the node that holds them) instead of each getting its
// own claim from a ResourceClaimTemplate, when the profile's flavour is a
// DRA driver (hardware.NVIDIADRA, hardware.HAMiDRA): a serving group or a
// gang on one GPU. Under a device plugin it changes nothing.
func (b *Builder[T]) SharedClaim(on bool) *T { return podspec.Of(&b.Handle).SharedClaim(on) }

// HostNetwork runs the pods in the node's network namespace.
func (b *Builder[T]) HostNetwork(on bool) *T { return podspec.Of(&b.Handle).HostNetwork(on) }
