package train

import (
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// Framework is what a Kubeflow Trainer v2 runtime trains with: the value
// of the runtime's trainer.kubeflow.org/framework label and the shape of
// the JobSet it makes. The runtimes github.com/kubeflow/trainer/v2 v2.3.0
// ships (manifests/base/runtimes) are one per framework.
type Framework string

// The frameworks of the runtimes Trainer v2.3.0 ships.
const (
	// FrameworkTorch: torchrun on every node (mlPolicy.torch; the Trainer
	// sets PET_NNODES, PET_NPROC_PER_NODE, PET_NODE_RANK, PET_MASTER_ADDR
	// and PET_MASTER_PORT, pkg/runtime/framework/plugins/torch/torch.go).
	FrameworkTorch Framework = "torch"
	// FrameworkDeepSpeed: an MPI launcher that trains too
	// (runLauncherAsNode) and nodes running sshd (mlPolicy.mpi).
	FrameworkDeepSpeed Framework = "deepspeed"
	// FrameworkMLX: Apple MLX over MPI, shaped as DeepSpeed.
	FrameworkMLX Framework = "mlx"
	// FrameworkJAX: jax.distributed on every node (mlPolicy.jax).
	FrameworkJAX Framework = "jax"
	// FrameworkXGBoost: a Rabit tracker and workers (mlPolicy.xgboost); the
	// Trainer derives the workers per node from the GPUs.
	FrameworkXGBoost Framework = "xgboost"
	// FrameworkTorchTune: torchtune recipes after a dataset and a model
	// initializer (mlPolicy.torch, three replicated jobs).
	FrameworkTorchTune Framework = "torchtune"
)

var frameworks = []Framework{FrameworkTorch, FrameworkDeepSpeed, FrameworkMLX, FrameworkJAX, FrameworkXGBoost, FrameworkTorchTune}

// UpstreamRuntime returns the name of the ClusterTrainingRuntime Trainer
// v2.3.0 ships for f (manifests/base/runtimes: torch-distributed,
// deepspeed-distributed, mlx-distributed, jax-distributed,
// xgboost-distributed), or "" for torchtune, whose runtimes are one per
// model (torchtune-llama3.2-1b…), and for an unknown framework.
func UpstreamRuntime(f Framework) string {
	switch f {
	case FrameworkTorch, FrameworkDeepSpeed, FrameworkMLX, FrameworkJAX, FrameworkXGBoost:
		return string(f) + "-distributed"
	}
	return ""
}

// mpiFramework reports the frameworks whose runtimes run an MPI launcher
// that trains too (mlPolicy.mpi with runLauncherAsNode).
func mpiFramework(f Framework) bool { return f == FrameworkDeepSpeed || f == FrameworkMLX }

// trainingJobs are the replicated jobs of a framework's runtime whose pods
// train: they get the pod settings (the Trainer applies resourcesPerNode and
// env to the trainer-ancestor job and, with runLauncherAsNode, to "node":
// pkg/runtime/core/trainingruntime.go newRuntimeInfo and
// plugins/jobset/builder.go Trainer, v2.3.0).
func trainingJobs(f Framework) []string {
	if mpiFramework(f) {
		return []string{trainer.Node, trainer.Launcher}
	}
	return []string{trainer.Node}
}

// reservedEnv are the variables each framework's plugin sets itself and
// whose webhook refuses in spec.trainer.env (pkg/constants/constants.go,
// v2.3.0).
func reservedEnv(f Framework) []string {
	switch {
	case f == FrameworkTorch || f == FrameworkTorchTune:
		return trainer.TorchReservedEnv
	case mpiFramework(f):
		return trainer.MPIReservedEnv
	case f == FrameworkXGBoost:
		return trainer.XGBoostReservedEnv
	}
	return nil
}

// RuntimePatchManager is the manager of the runtime patch cube writes into
// a TrainJob (spec.runtimePatches[].manager, a domain-prefixed path as the
// Trainer's webhook requires: plugins/jobset/jobset.go, v2.3.0).
const RuntimePatchManager = "cube.dev/train"

// TrainJob builds a Kubeflow Trainer v2 TrainJob
// (trainer.kubeflow.org/v1alpha1, github.com/kubeflow/trainer/v2 v2.3.0):
// the job names a runtime (a ClusterTrainingRuntime or TrainingRuntime, see
// ClusterRuntime) and says what the runtime leaves open. Create one with
// Trainer.
//
// Every pod setting applies (go doc pod.Builder), the way the Trainer
// reads a TrainJob: the image, command, args and env become spec.trainer
// (the Trainer sets them on the "node" container of the trainer step), the
// resources, Accelerators and what the hardware profile (On), Slice and
// Fabric ask for become spec.trainer.resourcesPerNode, and the rest of the
// pod (node selector, tolerations, affinity, volumes and their mounts,
// pod and container security context, ServiceAccount, image pull
// secrets, pod labels and annotations, an Ascend profile's or a fabric's
// included) becomes one entry of spec.runtimePatches managed by
// RuntimePatchManager, on the replicated jobs that train. A pod setting a
// TrainJob cannot carry (Scheduler, PriorityClass, ports, EnvFrom…) is
// refused, naming the runtime as where it belongs.
//
// The pod counts are the torchrun settings of the embedded Torch: Nodes(n)
// is spec.trainer.numNodes, Workers(n) is Nodes(n+1) as for a PyTorchJob
// (the Master counts as a node), and NprocPerNode is numProcPerNode
// (default: the accelerators per pod, or 1), so a PyTorchJob and a TrainJob
// given the same settings run the same pods. The elastic settings
// (Elastic, Rendezvous, RendezvousConf, ElasticRetry) are refused: a
// TrainJob of Trainer v2.3.0 has no elastic policy.
type TrainJob struct {
	pod.Builder[TrainJob]
	Torch[TrainJob]
	runtime    string
	framework  Framework
	namespaced bool
	deadline   *time.Duration
	suspend    bool
}

// Trainer starts a TrainJob named name on the ClusterTrainingRuntime
// torch-distributed (UpstreamRuntime(FrameworkTorch)) with two nodes, as
// PyTorch starts a Master and a Worker.
func Trainer(name string) *TrainJob {
	j := &TrainJob{framework: FrameworkTorch, runtime: UpstreamRuntime(FrameworkTorch)}
	podspec.Of(&j.Handle).Init(j, "trainjob", name)
	j.initTorch(j)
	return j
}

func (j *TrainJob) ret() *TrainJob {
	if j.Torch.self == nil {
		return &TrainJob{}
	}
	return j
}

// Runtime runs the job on the ClusterTrainingRuntime name, whose framework
// is f (a runtime carries it as its trainer.kubeflow.org/framework label;
// cube needs it to know the runtime's replicated jobs).
func (j *TrainJob) Runtime(name string, f Framework) *TrainJob {
	if j == nil {
		return nil
	}
	j.runtime, j.framework, j.namespaced = name, f, false
	return j.ret()
}

// NamespacedRuntime runs the job on the TrainingRuntime name in the job's
// own namespace, whose framework is f.
func (j *TrainJob) NamespacedRuntime(name string, f Framework) *TrainJob {
	if j == nil {
		return nil
	}
	j.runtime, j.framework, j.namespaced = name, f, true
	return j.ret()
}

// Torchrun replaces the command and arguments with TorchrunCommand(script,
// args...): the Trainer's PET_* variables are torchrun's defaults, as the
// training-operator's are for a PyTorchJob.
func (j *TrainJob) Torchrun(script string, args ...string) *TrainJob {
	if j == nil {
		return nil
	}
	j.Command(TorchrunCommand(script, args...)...)
	return j.Args()
}

// ActiveDeadline fails the job when it has run this long (whole seconds,
// rounded up): spec.activeDeadlineSeconds, Failed with reason
// DeadlineExceeded.
func (j *TrainJob) ActiveDeadline(d time.Duration) *TrainJob {
	if j == nil {
		return nil
	}
	j.deadline = &d
	return j.ret()
}

// Suspend creates the job suspended (true) or running (false, the
// default): spec.suspend.
func (j *TrainJob) Suspend(on bool) *TrainJob {
	if j == nil {
		return nil
	}
	j.suspend = on
	return j.ret()
}

// Build validates the settings and returns the TrainJob, or every problem
// at once.
func (j *TrainJob) Build() (*trainer.TrainJob, error) {
	if j == nil || unmade(&j.Builder) {
		return result[*trainer.TrainJob](nil, unmadeErrors("train.TrainJob", "Trainer"))
	}
	return result(j.render())
}

// Objects returns the TrainJob; it implements cube.Workload.
func (j *TrainJob) Objects() ([]client.Object, error) { return objects(j.Build()) }

func (j *TrainJob) render() (*trainer.TrainJob, field.ErrorList) {
	b := podspec.Of(&j.Handle)
	// The JobSet is named after the TrainJob, its Jobs <job>-<replicated
	// job>-<index> and their pods <job>-<index>-<pod index>; a TrainJob's
	// name is an RFC 1035 label of at most 63 characters (the CRD's
	// x-kubernetes-validations).
	errs := b.ValidateServiceMeta(validation.DNS1035LabelMaxLength)
	errs = append(errs, b.SettingErrors()...)
	specPath := field.NewPath("spec")
	trainerPath := specPath.Child("trainer")

	if !slices.Contains(frameworks, j.framework) {
		errs = append(errs, field.NotSupported(specPath.Child("runtimeRef", "framework"), j.framework, frameworks))
	}
	if j.runtime == "" {
		errs = append(errs, field.Required(specPath.Child("runtimeRef", "name"), "a runtime is required: Runtime(name, framework)"))
	}

	t := &j.Torch.torch
	nodes := 2
	if t.size.set {
		workers, countErrs := t.size.workers(true, trainerPath.Child("numNodes"))
		errs = append(errs, countErrs...)
		nodes = workers + 1
	}
	if nodes > 1<<31-1 {
		errs = append(errs, field.Invalid(trainerPath.Child("numNodes"), nodes, "must fit in 32 bits"))
	}
	if t.elastic != nil || t.rdzv != nil || len(t.rdzvConf) > 0 || t.elasticRetry != nil {
		errs = append(errs, field.Forbidden(field.NewPath("elastic"),
			"a TrainJob of Kubeflow Trainer v2.3.0 has no elastic policy (Elastic, Rendezvous, RendezvousConf and ElasticRetry are the training-operator's): use train.PyTorch for an elastic job"))
	}
	var nproc *int32
	switch {
	case j.framework == FrameworkJAX || j.framework == FrameworkXGBoost:
		// Neither plugin reads numProcPerNode (v2.3.0): JAX runs one
		// process per node, XGBoost one worker per GPU.
		if t.nproc != nil {
			errs = append(errs, field.Forbidden(trainerPath.Child("numProcPerNode"), fmt.Sprintf("the %s runtime does not read numProcPerNode", j.framework)))
		}
	default:
		n := t.nprocPerNode(b.GPUCount())
		if n < 1 {
			errs = append(errs, field.Invalid(trainerPath.Child("numProcPerNode"), n, "must be at least 1"))
		}
		nproc = ptr.To(clamp32(n))
	}

	tmpl, tmplErrs := b.Template(trainerPath, podspec.TemplateOptions{
		Container:         trainer.Node,
		DefaultImage:      "runtime", // the runtime's; dropped below
		OmitSettingErrors: true,
	})
	errs = append(errs, sharedPlacement(tmplErrs, trainerPath)...)
	spec, patch, splitErrs := splitTemplate(tmpl, trainerPath, b.ImageName() != "")
	errs = append(errs, splitErrs...)
	if reserved := reservedEnv(j.framework); reserved != nil {
		for i, e := range spec.Env {
			if slices.Contains(reserved, e.Name) {
				errs = append(errs, field.Forbidden(trainerPath.Child("env").Index(i).Child("name"),
					fmt.Sprintf("%s is set by the Trainer's %s plugin itself", e.Name, j.framework)))
			}
		}
	}
	spec.NumNodes = ptr.To(clamp32(nodes))
	spec.NumProcPerNode = nproc

	job := &trainer.TrainJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.TrainJobKind},
		ObjectMeta: b.ObjectMeta(b.Name()),
		Spec: trainer.TrainJobSpec{
			RuntimeRef: trainer.RuntimeRef{Name: j.runtime, APIGroup: ptr.To(trainer.GroupVersion.Group), Kind: ptr.To(trainer.ClusterTrainingRuntimeKind)},
			Trainer:    spec,
		},
	}
	if j.namespaced {
		job.Spec.RuntimeRef.Kind = ptr.To(trainer.TrainingRuntimeKind)
	}
	if j.suspend {
		job.Spec.Suspend = ptr.To(true)
	}
	if j.deadline != nil {
		s, err := seconds(*j.deadline, specPath.Child("activeDeadlineSeconds"), true)
		if err != nil {
			errs = append(errs, err)
		}
		job.Spec.ActiveDeadlineSeconds = s
	}
	// Labels the job's pods carry that the job must carry too (Ascend's
	// ring-controller.atlas) go on the TrainJob and, through the patch's
	// template metadata, on the JobSet the Trainer makes.
	copyJobLabels(&job.ObjectMeta, tmpl.Labels)
	var jobSetMeta *metav1.ObjectMeta
	for _, k := range jobLabels {
		if v, ok := tmpl.Labels[k]; ok {
			if jobSetMeta == nil {
				jobSetMeta = &metav1.ObjectMeta{Labels: map[string]string{}}
			}
			jobSetMeta.Labels[k] = v
		}
	}
	// Volcano's queue is read from the JobSet's annotations
	// (plugins/volcano/volcano.go, v2.3.0), which the patch's template
	// metadata sets.
	if q, ok := tmpl.Annotations[podspec.VolcanoQueueAnnotation]; ok {
		if jobSetMeta == nil {
			jobSetMeta = &metav1.ObjectMeta{}
		}
		jobSetMeta.Annotations = map[string]string{podspec.VolcanoQueueAnnotation: q}
	}
	if patch != nil || jobSetMeta != nil {
		tp := &trainer.JobSetTemplatePatch{Metadata: jobSetMeta}
		if patch != nil {
			tp.Spec = &trainer.JobSetSpecPatch{}
			for _, name := range trainingJobs(j.framework) {
				tp.Spec.ReplicatedJobs = append(tp.Spec.ReplicatedJobs, trainer.ReplicatedJobPatch{
					Name:     name,
					Template: &trainer.JobTemplatePatch{Spec: &trainer.JobSpecPatch{Template: patch.DeepCopy()}},
				})
			}
		}
		job.Spec.RuntimePatches = []trainer.RuntimePatch{{
			Manager:             RuntimePatchManager,
			TrainingRuntimeSpec: &trainer.TrainingRuntimeSpecPatch{Template: tp},
		}}
	}
	return job, dedupe(errs)
}

// splitTemplate divides a pod template rendered from the pod settings into
// what spec.trainer carries and what a runtime patch carries (the fields of
// PodTemplatePatch, pkg/apis/trainer/v1alpha1/trainjob_types.go, v2.3.0),
// and refuses the rest under path. withImage says the image was set (else
// the runtime's stays).
func splitTemplate(tmpl corev1.PodTemplateSpec, path *field.Path, withImage bool) (*trainer.Trainer, *trainer.PodTemplatePatch, field.ErrorList) {
	var errs field.ErrorList
	runtimeOnly := func(setting, field_ string) {
		errs = append(errs, field.Forbidden(path.Child(field_), fmt.Sprintf(
			"%s cannot be set on a TrainJob (Kubeflow Trainer v2.3.0 patches no such field of a runtime's pods): set it on the runtime (train.ClusterRuntime)", setting)))
	}
	rest := tmpl.DeepCopy()
	c := rest.Spec.Containers[0]
	rest.Spec.Containers = rest.Spec.Containers[1:]
	out := &trainer.Trainer{Command: c.Command, Args: c.Args, Env: c.Env}
	if withImage {
		out.Image = ptr.To(c.Image)
	}
	if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
		out.ResourcesPerNode = c.Resources.DeepCopy()
	}
	cp := trainer.ContainerPatch{Name: trainer.Node, VolumeMounts: c.VolumeMounts, SecurityContext: c.SecurityContext}
	if len(c.EnvFrom) > 0 {
		runtimeOnly("EnvFromSecretAll and EnvFromConfigMap (envFrom)", "envFrom")
	}
	if len(c.Ports) > 0 {
		runtimeOnly("Port (container ports)", "ports")
	}
	if c.WorkingDir != "" {
		runtimeOnly("WorkingDir", "workingDir")
	}
	if c.ImagePullPolicy != "" {
		runtimeOnly("ImagePullPolicy", "imagePullPolicy")
	}
	c.Name, c.Image, c.Command, c.Args, c.Env, c.Resources, c.VolumeMounts, c.SecurityContext = "", "", nil, nil, nil, corev1.ResourceRequirements{}, nil, nil
	c.EnvFrom, c.Ports, c.WorkingDir, c.ImagePullPolicy = nil, nil, "", ""
	if !equality.Semantic.DeepEqual(c, corev1.Container{}) {
		runtimeOnly("this container setting", "containers")
	}
	s := &rest.Spec
	ps := &trainer.PodSpecPatch{
		Volumes:          s.Volumes,
		ImagePullSecrets: s.ImagePullSecrets,
		SecurityContext:  s.SecurityContext,
		NodeSelector:     s.NodeSelector,
		Affinity:         s.Affinity,
		Tolerations:      s.Tolerations,
	}
	if s.ServiceAccountName != "" {
		ps.ServiceAccountName = ptr.To(s.ServiceAccountName)
	}
	if cp.VolumeMounts != nil || cp.SecurityContext != nil {
		ps.Containers = []trainer.ContainerPatch{cp}
	}
	for _, f := range []struct {
		set           bool
		setting, name string
	}{
		{s.SchedulerName != "", "Scheduler (or Gang)", "schedulerName"},
		{s.PriorityClassName != "", "PriorityClass", "priorityClassName"},
		{s.HostNetwork, "host networking", "hostNetwork"},
		{len(s.InitContainers) > 0, "an init container", "initContainers"},
		{len(s.Containers) > 0, "a second container", "containers"},
	} {
		if f.set {
			runtimeOnly(f.setting, f.name)
		}
	}
	s.Volumes, s.ImagePullSecrets, s.SecurityContext, s.NodeSelector, s.Affinity, s.Tolerations, s.ServiceAccountName = nil, nil, nil, nil, nil, nil, ""
	s.SchedulerName, s.PriorityClassName, s.HostNetwork, s.InitContainers, s.Containers = "", "", false, nil, nil
	if s.DNSPolicy == corev1.DNSClusterFirstWithHostNet {
		s.DNSPolicy = "" // comes with host networking, refused above
	}
	if !equality.Semantic.DeepEqual(*s, corev1.PodSpec{}) {
		runtimeOnly("this pod setting", "podSpec")
	}
	patch := &trainer.PodTemplatePatch{}
	if len(rest.Labels) > 0 || len(rest.Annotations) > 0 {
		patch.Metadata = &metav1.ObjectMeta{Labels: rest.Labels, Annotations: rest.Annotations}
	}
	if !equality.Semantic.DeepEqual(*ps, trainer.PodSpecPatch{}) {
		patch.Spec = ps
	}
	if patch.Metadata == nil && patch.Spec == nil {
		patch = nil
	}
	return out, patch, errs
}
