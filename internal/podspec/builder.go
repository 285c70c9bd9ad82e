package podspec

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/vgpu"
)

// VolcanoQueueAnnotation puts a pod or PodGroup in a Volcano queue.
const VolcanoQueueAnnotation = "scheduling.volcano.sh/queue-name"

// KueueQueueLabel puts a job in a Kueue LocalQueue of its namespace
// (sigs.k8s.io/kueue v0.17.0 pkg/controller/constants/constants.go,
// QueueLabel): Kueue's webhook suspends a job that carries it until its
// ClusterQueue admits the whole job.
const KueueQueueLabel = "kueue.x-k8s.io/queue-name"

// KueuePriorityLabel gives a job Kueue's WorkloadPriorityClass of that
// name (sigs.k8s.io/kueue v0.17.0 pkg/controller/constants/constants.go,
// WorkloadPriorityClassLabel, read from the job's own labels by
// jobframework.WorkloadPriorityClassName; the Deployment, StatefulSet and
// LeaderWorkerSet webhooks copy it to their pods): the priority Kueue
// orders and preempts by, which kube-scheduler does not see.
const KueuePriorityLabel = "kueue.x-k8s.io/priority-class"

// Builder is the state behind pod.Builder and pod.Meta: the pod settings
// every cube workload shares, and the plumbing that renders them (Init,
// Template, SettingErrors, the metadata and the reads). Its setters are the
// implementation of pod.Builder's, which document them for users; a package
// of cube reaches it with Of.
type Builder[T any] struct {
	Meta[T]

	image           string
	pullPolicy      corev1.PullPolicy
	command, args   []string
	workingDir      string
	env             []corev1.EnvVar
	envFrom         []corev1.EnvFromSource
	requests        map[corev1.ResourceName]string
	limits          map[corev1.ResourceName]string
	profile         *hardware.Profile
	devices         int
	devicesSet      bool
	slice           *vgpu.Spec
	fabric          hardware.Fabric
	sharedMemory    string
	volumes         []mountedVolume
	nodeSelector    map[string]string
	tolerations     []corev1.Toleration
	affinity        *corev1.Affinity
	priorityClass   string
	serviceAccount  string
	pullSecrets     []string
	scheduler       string
	queue           string
	podLabels       map[string]string
	podAnnotations  map[string]string
	podSecurity     *corev1.PodSecurityContext
	containerSecure *corev1.SecurityContext
	ports           []corev1.ContainerPort
	hostNetwork     bool
	edge            *hardware.Edge
	sharedClaim     bool
	rendersClaims   bool // the workload appends Claims to its objects
	problems        field.ErrorList
}

type mountedVolume struct {
	volume    corev1.Volume
	mountPath string
	subPath   string
	readOnly  bool
}

// Init binds b to the builder that embeds it; kind and name are as for InitMeta.
func (b *Builder[T]) Init(self *T, kind, name string) { b.InitMeta(self, kind, name) }

// Image sets the container image.
func (b *Builder[T]) Image(image string) *T { b.image = image; return b.ret() }

// ImagePullPolicy sets the image pull policy.
func (b *Builder[T]) ImagePullPolicy(p corev1.PullPolicy) *T { b.pullPolicy = p; return b.ret() }

// Command replaces the container's entrypoint.
func (b *Builder[T]) Command(cmd ...string) *T { b.command = slices.Clone(cmd); return b.ret() }

// Args replaces the container's arguments.
func (b *Builder[T]) Args(args ...string) *T { b.args = slices.Clone(args); return b.ret() }

// AddArgs appends arguments.
func (b *Builder[T]) AddArgs(args ...string) *T { b.args = append(b.args, args...); return b.ret() }

// WorkingDir sets the container's working directory.
func (b *Builder[T]) WorkingDir(dir string) *T { b.workingDir = dir; return b.ret() }

// Env sets an environment variable, replacing one of the same name. A
// literal that looks like a credential under a secret-named variable
// (SecretLiteral: HF_TOKEN=hf_…, OPENAI_API_KEY=sk-…) is refused, because
// the rendered objects would carry it in clear: use EnvFromSecret.
func (b *Builder[T]) Env(name, value string) *T {
	if SecretLiteral(name, value) {
		b.problems = append(b.problems, SecretLiteralError(field.NewPath("env").Key(name).Child("value"), name))
	}
	return b.setEnv(corev1.EnvVar{Name: name, Value: value})
}

// EnvFromSecret sets an environment variable from a key of a Secret
// (secretKeyRef), so the value never appears in the rendered objects.
func (b *Builder[T]) EnvFromSecret(name, secret, key string) *T {
	if secret == "" || key == "" {
		b.problems = append(b.problems, field.Required(field.NewPath("env").Key(name).Child("valueFrom", "secretKeyRef"), "secret name and key are required"))
	}
	return b.setEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key},
	}})
}

// EnvFromField sets an environment variable from a pod field (fieldRef),
// e.g. "status.podIP".
func (b *Builder[T]) EnvFromField(name, fieldPath string) *T {
	return b.setEnv(corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}})
}

// EnvFromSecretAll adds every key of a Secret as environment variables.
func (b *Builder[T]) EnvFromSecretAll(secret string) *T {
	b.envFrom = append(b.envFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: secret}}})
	return b.ret()
}

// EnvFromConfigMap adds every key of a ConfigMap as environment variables.
func (b *Builder[T]) EnvFromConfigMap(configMap string) *T {
	b.envFrom = append(b.envFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}})
	return b.ret()
}

func (b *Builder[T]) setEnv(v corev1.EnvVar) *T {
	if i := slices.IndexFunc(b.env, func(e corev1.EnvVar) bool { return e.Name == v.Name }); i >= 0 {
		b.env[i] = v
	} else {
		b.env = append(b.env, v)
	}
	return b.ret()
}

// CPU sets the CPU request and limit ("8", "500m").
func (b *Builder[T]) CPU(q string) *T { return b.Resource(corev1.ResourceCPU, q) }

// Memory sets the memory request and limit ("32Gi").
func (b *Builder[T]) Memory(q string) *T { return b.Resource(corev1.ResourceMemory, q) }

// Resource sets the request and limit of any resource.
func (b *Builder[T]) Resource(name corev1.ResourceName, q string) *T {
	b.Request(name, q)
	return b.Limit(name, q)
}

// Request sets a request only (the limit stays as set, or unset).
func (b *Builder[T]) Request(name corev1.ResourceName, q string) *T {
	if b.requests == nil {
		b.requests = map[corev1.ResourceName]string{}
	}
	b.requests[name] = q
	return b.ret()
}

// Limit sets a limit only.
func (b *Builder[T]) Limit(name corev1.ResourceName, q string) *T {
	if b.limits == nil {
		b.limits = map[corev1.ResourceName]string{}
	}
	b.limits[name] = q
	return b.ret()
}

// On selects the accelerator (or CPU) profile the pods run on. It decides
// resource names, node selectors, tolerations, mounts and the collective
// library's environment; the same builder moves from NVIDIA to Ascend by
// changing this one argument.
func (b *Builder[T]) On(p hardware.Profile) *T { b.profile = &p; return b.ret() }

// Accelerators sets how many whole accelerators each pod gets (GPUs or NPUs, per
// the profile). Without On, NVIDIA H100 is not assumed: the count needs a
// profile and Template reports it missing.
func (b *Builder[T]) Accelerators(n int) *T {
	if n < 0 {
		b.problems = append(b.problems, field.Invalid(field.NewPath("accelerators"), n, "must not be negative"))
	}
	b.devices, b.devicesSet = n, true
	return b.ret()
}

// Slice gives each pod a fraction of an accelerator instead of whole ones
// (HAMi, MIG, Volcano vGPU or Ascend vNPU); it also sets the profile.
func (b *Builder[T]) Slice(s *vgpu.Spec) *T {
	if s == nil {
		b.problems = append(b.problems, field.Required(field.NewPath("slice"), "slice is nil"))
		return b.ret()
	}
	b.slice = s
	p := vgpuspec.Of(s).Profile()
	b.profile = &p
	return b.ret()
}

// Fabric sets the network the collective library uses between pods
// (hardware.InfiniBand, hardware.RoCE, hardware.TCP).
func (b *Builder[T]) Fabric(f hardware.Fabric) *T { b.fabric = f; return b.ret() }

// SharedMemory sizes /dev/shm (a memory-backed emptyDir), e.g. "16Gi".
func (b *Builder[T]) SharedMemory(size string) *T { b.sharedMemory = size; return b.ret() }

// PVC mounts a PersistentVolumeClaim at mountPath.
func (b *Builder[T]) PVC(claim, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("pvc", claim), VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}, mountPath)
}

// PVCSubPath mounts a sub-path of a claim at mountPath.
func (b *Builder[T]) PVCSubPath(claim, subPath, mountPath string) *T {
	b.PVC(claim, mountPath)
	b.volumes[len(b.volumes)-1].subPath = subPath
	b.volumes[len(b.volumes)-1].volume.Name = volumeName("pvc", claim+"-"+subPath)
	return b.ret()
}

// HostPath mounts a directory of the node at mountPath.
func (b *Builder[T]) HostPath(hostPath, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("host", hostPath), VolumeSource: corev1.VolumeSource{
		HostPath: &corev1.HostPathVolumeSource{Path: hostPath},
	}}, mountPath)
}

// NFS mounts an NFS export at mountPath.
func (b *Builder[T]) NFS(server, exportPath, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("nfs", server+exportPath), VolumeSource: corev1.VolumeSource{
		NFS: &corev1.NFSVolumeSource{Server: server, Path: exportPath},
	}}, mountPath)
}

// ConfigMapVolume mounts a ConfigMap's keys as files under mountPath.
func (b *Builder[T]) ConfigMapVolume(configMap, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("cm", configMap), VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}},
	}}, mountPath)
}

// SecretVolume mounts a Secret's keys as files under mountPath, read-only.
func (b *Builder[T]) SecretVolume(secret, mountPath string) *T {
	b.AddVolume(corev1.Volume{Name: volumeName("secret", secret), VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: secret},
	}}, mountPath)
	b.volumes[len(b.volumes)-1].readOnly = true
	return b.ret()
}

// EmptyDir mounts a scratch directory at mountPath.
func (b *Builder[T]) EmptyDir(name, mountPath string) *T {
	return b.AddVolume(corev1.Volume{Name: volumeName("scratch", name), VolumeSource: corev1.VolumeSource{
		EmptyDir: &corev1.EmptyDirVolumeSource{},
	}}, mountPath)
}

// AddVolume adds any volume, mounted at mountPath in the main container
// (an empty mountPath adds the volume without mounting it).
func (b *Builder[T]) AddVolume(v corev1.Volume, mountPath string) *T {
	b.volumes = append(b.volumes, mountedVolume{volume: *v.DeepCopy(), mountPath: mountPath})
	return b.ret()
}

// NodeSelector adds a node selector.
func (b *Builder[T]) NodeSelector(key, value string) *T {
	if b.nodeSelector == nil {
		b.nodeSelector = map[string]string{}
	}
	b.nodeSelector[key] = value
	return b.ret()
}

// AddToleration adds a toleration.
func (b *Builder[T]) AddToleration(t corev1.Toleration) *T {
	b.tolerations = append(b.tolerations, t)
	return b.ret()
}

// Affinity replaces the pod affinity.
func (b *Builder[T]) Affinity(a *corev1.Affinity) *T { b.affinity = a.DeepCopy(); return b.ret() }

// PriorityClass sets the pod priority class.
func (b *Builder[T]) PriorityClass(name string) *T {
	b.checkObjectName("priorityClass", name)
	b.priorityClass = name
	return b.ret()
}

// ServiceAccount sets the pod's service account.
func (b *Builder[T]) ServiceAccount(name string) *T {
	b.checkObjectName("serviceAccount", name)
	b.serviceAccount = name
	return b.ret()
}

// checkObjectName records a problem with the name of an object a setting
// refers to (a DNS-1123 subdomain, as the API server checks it on pods;
// empty: none).
func (b *Builder[T]) checkObjectName(setting, name string) {
	if name == "" {
		return
	}
	for _, msg := range validation.IsDNS1123Subdomain(name) {
		b.problems = append(b.problems, field.Invalid(field.NewPath(setting), name, msg))
	}
}

// ImagePullSecret adds an image pull secret.
func (b *Builder[T]) ImagePullSecret(name string) *T {
	b.pullSecrets = append(b.pullSecrets, name)
	return b.ret()
}

// Scheduler sets the scheduler name (e.g. "volcano", "hami-scheduler").
func (b *Builder[T]) Scheduler(name string) *T {
	b.checkObjectName("scheduler", name)
	b.scheduler = name
	return b.ret()
}

// Queue puts the pods in a Volcano queue; job builders also set it on the
// job's scheduling policy. A queue is a cluster-scoped Volcano object, so
// its name is a DNS-1123 subdomain, and Volcano refuses jobs in its root
// queue (pkg/webhooks/admission/jobs/validate/admit_job.go).
func (b *Builder[T]) Queue(name string) *T {
	p := field.NewPath("queue")
	if name != "" { // empty: no queue
		for _, msg := range validation.IsDNS1123Subdomain(name) {
			b.problems = append(b.problems, field.Invalid(p, name, msg))
		}
	}
	if name == "root" {
		b.problems = append(b.problems, field.Invalid(p, name, "Volcano accepts no jobs in the root queue; use a leaf queue"))
	}
	b.queue = name
	return b.ret()
}

// LocalQueue puts the workload in Kueue's LocalQueue name of its
// namespace: the label KueueQueueLabel on its top-level objects (the job,
// Deployment, StatefulSet or LeaderWorkerSet Kueue manages; Kueue ignores
// it on the rest). Kueue then admits the whole workload when its
// ClusterQueue has quota for every pod, or none of it. The name is an
// object name and a label value.
func (b *Builder[T]) LocalQueue(name string) *T {
	if name != "" { // empty: no queue
		b.kueueName(KueueQueueLabel, name)
	}
	b.localQueue = name
	return b.ret()
}

// WorkloadPriority gives the workload Kueue's WorkloadPriorityClass name:
// the label KueuePriorityLabel on its top-level objects, beside
// LocalQueue's. The name is an object name and a label value.
func (b *Builder[T]) WorkloadPriority(name string) *T {
	if name != "" { // empty: the pods' PriorityClass, or none
		b.kueueName(KueuePriorityLabel, name)
	}
	b.workloadPriority = name
	return b.ret()
}

// kueueName records the problems of name, the value of the Kueue label
// key that names one of Kueue's objects: an object name and a label
// value.
func (b *Builder[T]) kueueName(key, name string) {
	p := field.NewPath("metadata", "labels").Key(key)
	for _, msg := range append(validation.IsDNS1123Subdomain(name), validation.IsValidLabelValue(name)...) {
		b.problems = append(b.problems, field.Invalid(p, name, msg))
	}
}

// PodLabel adds a label to the pods only.
func (b *Builder[T]) PodLabel(key, value string) *T {
	if b.podLabels == nil {
		b.podLabels = map[string]string{}
	}
	b.podLabels[key] = value
	return b.ret()
}

// PodAnnotation adds an annotation to the pods only.
func (b *Builder[T]) PodAnnotation(key, value string) *T {
	if b.podAnnotations == nil {
		b.podAnnotations = map[string]string{}
	}
	b.podAnnotations[key] = value
	return b.ret()
}

// PodSecurityContext replaces the pod security context.
func (b *Builder[T]) PodSecurityContext(sc *corev1.PodSecurityContext) *T {
	b.podSecurity = sc.DeepCopy()
	return b.ret()
}

// SecurityContext replaces the main container's security context.
func (b *Builder[T]) SecurityContext(sc *corev1.SecurityContext) *T {
	b.containerSecure = sc.DeepCopy()
	return b.ret()
}

// Port exposes a named container port on the main container; Template
// reports a number outside 1-65535 or a name that is not an IANA service
// name (at most 15 lowercase letters, digits and '-').
func (b *Builder[T]) Port(name string, port int32) *T {
	b.ports = append(b.ports, corev1.ContainerPort{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP})
	return b.ret()
}

// Edge places the pods on KubeEdge edge nodes (hardware.Edge: node
// selection, tolerations, host networking, resources checked against the
// edge device); the edge settings are applied after the hardware profile.
// It replaces an earlier Edge.
func (b *Builder[T]) Edge(e hardware.Edge) *T {
	e.NodeLabels = maps.Clone(e.NodeLabels)
	e.Capacity = e.Capacity.DeepCopy()
	b.edge = &e
	return b.ret()
}

// HostNetwork runs the pods in the node's network namespace.
func (b *Builder[T]) HostNetwork(on bool) *T { b.hostNetwork = on; return b.ret() }
