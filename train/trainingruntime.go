package train

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
	trainer "github.com/cubestudio/cube/train/trainerv1alpha1"
)

// The layout of the MPI runtime images Trainer v2.3.0 ships
// (manifests/base/runtimes/deepspeed_distributed.yaml and
// mlx_distributed.yaml): the nodes run sshd as user 1000 from its home, the
// launcher reaches them with the keys the Trainer mounts there.
const (
	mpiUser          = 1000
	mpiSSHAuthPath   = "/home/mpiuser/.ssh"
	mpiSSHDConfig    = "/home/mpiuser/.sshd_config"
	mpiSSHDPort      = 2222
	mpiSSHDReadiness = 5 * time.Second
)

// ClusterTrainingRuntime builds a Kubeflow Trainer v2 ClusterTrainingRuntime
// (trainer.kubeflow.org/v1alpha1, v2.3.0): the JobSet that every TrainJob
// naming it becomes, in the shape of the runtime Trainer v2.3.0 ships for
// its framework (manifests/base/runtimes), with the platform's image,
// hardware and scheduling in it. A platform installs one per framework and
// hardware it offers; TrainJobs (Trainer) name it with Runtime. Create
// one with ClusterRuntime.
//
// Every pod setting applies (go doc pod.Builder) to the pods that train:
// the "node" replicated job and, for DeepSpeed and MLX, the MPI launcher,
// whose nodes run sshd as the Trainer's runtime images do. Beside them:
// Nodes (mlPolicy.numNodes, the default of the TrainJobs), NprocPerNode
// (the MPI slots per node; torch's comes from each TrainJob), Gang
// (podGroupPolicy: Volcano), Retry (the JobSet's failurePolicy.maxRestarts)
// and TTLAfterFinished (the JobSet's ttlSecondsAfterFinished): what a
// TrainJob cannot set itself.
type ClusterTrainingRuntime struct {
	pod.Builder[ClusterTrainingRuntime]
	self      *ClusterTrainingRuntime
	framework Framework
	nodes     *int
	nproc     *int
	gang      bool
	retry     *retry.Policy
	ttl       *time.Duration
}

// ClusterRuntime starts a ClusterTrainingRuntime named name for framework
// f (FrameworkTorch, FrameworkDeepSpeed, FrameworkMLX, FrameworkJAX or
// FrameworkXGBoost; torchtune's runtimes are one per model: install
// Trainer's own).
func ClusterRuntime(name string, f Framework) *ClusterTrainingRuntime {
	r := &ClusterTrainingRuntime{framework: f}
	r.self = r
	podspec.Of(&r.Handle).Init(r, "clustertrainingruntime", name)
	return r
}

func (r *ClusterTrainingRuntime) ret() *ClusterTrainingRuntime {
	if r.self == nil {
		return &ClusterTrainingRuntime{}
	}
	return r
}

// Nodes sets the runtime's node count (mlPolicy.numNodes, default 1), which
// a TrainJob's own Nodes replaces.
func (r *ClusterTrainingRuntime) Nodes(n int) *ClusterTrainingRuntime {
	if r == nil {
		return nil
	}
	r.nodes = &n
	return r.ret()
}

// NprocPerNode sets the MPI slots per node of a DeepSpeed or MLX runtime
// (mlPolicy.mpi.numProcPerNode; default: the accelerators per pod, or 1).
func (r *ClusterTrainingRuntime) NprocPerNode(n int) *ClusterTrainingRuntime {
	if r == nil {
		return nil
	}
	r.nproc = &n
	return r.ret()
}

// Gang makes the Trainer create a Volcano PodGroup of all the job's pods
// (podGroupPolicy.volcano) and Volcano schedule them: they start together
// or not at all. The queue is a TrainJob's (Queue).
func (r *ClusterTrainingRuntime) Gang() *ClusterTrainingRuntime {
	if r == nil {
		return nil
	}
	r.gang = true
	return r.ret()
}

// Retry sets how many times the JobSet is recreated after one of its jobs
// failed: r.Limit becomes failurePolicy.maxRestarts (sigs.k8s.io/jobset
// v0.12.0, api/jobset/v1alpha2/jobset_types.go). The JobSet controller
// restarts at once, so a Backoff, Factor, MaxBackoff or MaxDuration is
// refused.
func (r *ClusterTrainingRuntime) Retry(p retry.Policy) *ClusterTrainingRuntime {
	if r == nil {
		return nil
	}
	r.retry = &p
	return r.ret()
}

// TTLAfterFinished deletes a TrainJob's JobSet this long after it finished
// (ttlSecondsAfterFinished, whole seconds, rounded up); the TrainJob and
// its status stay.
func (r *ClusterTrainingRuntime) TTLAfterFinished(d time.Duration) *ClusterTrainingRuntime {
	if r == nil {
		return nil
	}
	r.ttl = &d
	return r.ret()
}

// Build validates the settings and returns the ClusterTrainingRuntime, or
// every problem at once.
func (r *ClusterTrainingRuntime) Build() (*trainer.ClusterTrainingRuntime, error) {
	if r == nil || unmade(&r.Builder) {
		return result[*trainer.ClusterTrainingRuntime](nil, unmadeErrors("train.ClusterTrainingRuntime", "ClusterRuntime"))
	}
	return result(r.render())
}

// Objects returns the ClusterTrainingRuntime; it implements cube.Workload.
func (r *ClusterTrainingRuntime) Objects() ([]client.Object, error) { return objects(r.Build()) }

func (r *ClusterTrainingRuntime) render() (*trainer.ClusterTrainingRuntime, field.ErrorList) {
	b := podspec.Of(&r.Handle)
	errs := b.ValidateMeta(253)
	errs = append(errs, b.SettingErrors()...)
	specPath := field.NewPath("spec")
	meta := b.ObjectMeta(b.Name())
	if meta.Namespace != "" {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "namespace"), "a ClusterTrainingRuntime is cluster-scoped: drop Namespace"))
		meta.Namespace = ""
	}
	if meta.Labels == nil {
		meta.Labels = map[string]string{}
	}
	meta.Labels[trainer.LabelFramework] = string(r.framework)

	policy := &trainer.MLPolicy{NumNodes: ptr.To(int32(1))}
	if r.nodes != nil {
		if *r.nodes < 1 {
			errs = append(errs, field.Invalid(specPath.Child("mlPolicy", "numNodes"), *r.nodes, "must be at least 1"))
		}
		policy.NumNodes = ptr.To(clamp32(*r.nodes))
	}
	mpi := mpiFramework(r.framework)
	switch r.framework {
	case FrameworkTorch:
		policy.Torch = &trainer.TorchMLPolicySource{}
	case FrameworkJAX:
		policy.JAX = &trainer.JAXMLPolicySource{}
	case FrameworkXGBoost:
		policy.XGBoost = &trainer.XGBoostMLPolicySource{}
	case FrameworkDeepSpeed, FrameworkMLX:
		n := perPod(r.nproc, b.GPUCount())
		if n < 1 {
			errs = append(errs, field.Invalid(specPath.Child("mlPolicy", "mpi", "numProcPerNode"), n, "must be at least 1"))
		}
		policy.MPI = &trainer.MPIMLPolicySource{
			NumProcPerNode:    ptr.To(clamp32(n)),
			MPIImplementation: ptr.To(trainer.MPIImplementationOpenMPI),
			SSHAuthMountPath:  ptr.To(mpiSSHAuthPath),
			RunLauncherAsNode: ptr.To(true),
		}
	case FrameworkTorchTune:
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "labels").Key(trainer.LabelFramework), r.framework,
			[]Framework{FrameworkTorch, FrameworkDeepSpeed, FrameworkMLX, FrameworkJAX, FrameworkXGBoost}))
	default:
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "labels").Key(trainer.LabelFramework), r.framework, frameworks))
	}
	if r.nproc != nil && !mpi {
		errs = append(errs, field.Forbidden(field.NewPath("nprocPerNode"), fmt.Sprintf("a %s runtime has no processes per node of its own: set NprocPerNode on each TrainJob", r.framework)))
	}

	jobsPath := specPath.Child("template", "spec", "replicatedJobs")
	tmpl, tmplErrs := b.Template(jobsPath.Index(0).Child("template", "spec", "template"), podspec.TemplateOptions{
		Container:          trainer.Node,
		ScheduledByVolcano: r.gang,
		OmitSettingErrors:  true,
	})
	errs = append(errs, sharedPlacement(tmplErrs, jobsPath.Index(0).Child("template", "spec", "template"))...)
	if r.gang {
		if s := tmpl.Spec.SchedulerName; s != "" && s != VolcanoScheduler {
			errs = append(errs, field.Invalid(jobsPath.Index(0).Child("template", "spec", "template", "spec", "schedulerName"), s, "Gang hands the pods to Volcano: drop Scheduler"))
		}
		tmpl.Spec.SchedulerName = VolcanoScheduler
	}
	// The runtime's pods are every TrainJob's that names it, not the
	// runtime's own release's: they carry none of its identity labels
	// (each cube TrainJob patches in its own).
	for k := range b.Identity().Labels() {
		delete(tmpl.Labels, k)
	}
	errs = append(errs, checkTemplatePorts(tmpl, jobsPath.Index(0).Child("template", "spec", "template"))...)
	job := func(name string, t corev1.PodTemplateSpec, ancestor bool) jobsetv1alpha2.ReplicatedJob {
		rj := jobsetv1alpha2.ReplicatedJob{Name: name, Replicas: 1}
		if ancestor {
			rj.Template.Labels = map[string]string{trainer.LabelTrainJobAncestor: trainer.AncestorTrainer}
		}
		rj.Template.Spec.Template = t
		return rj
	}
	spec := jobsetv1alpha2.JobSetSpec{}
	if mpi {
		// The nodes run sshd as the runtime images' user; the launcher
		// (the trainer step, which trains too) runs the command.
		node := *tmpl.DeepCopy()
		c := &node.Spec.Containers[0]
		c.Command = []string{"/usr/sbin/sshd"}
		c.Args = []string{"-De", "-f", mpiSSHDConfig}
		c.ReadinessProbe = &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(mpiSSHDPort)}},
			InitialDelaySeconds: int32(mpiSSHDReadiness / time.Second),
		}
		launcher := *tmpl.DeepCopy()
		for _, t := range []*corev1.PodTemplateSpec{&node, &launcher} {
			asUser(t)
		}
		launcherJob := job(trainer.Launcher, launcher, true)
		launcherJob.DependsOn = []jobsetv1alpha2.DependsOn{{Name: trainer.Node, Status: jobsetv1alpha2.DependencyReady}}
		spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{job(trainer.Node, node, false), launcherJob}
		spec.Network = &jobsetv1alpha2.Network{PublishNotReadyAddresses: ptr.To(true)}
		spec.SuccessPolicy = &jobsetv1alpha2.SuccessPolicy{Operator: jobsetv1alpha2.OperatorAll, TargetReplicatedJobs: []string{trainer.Launcher}}
	} else {
		spec.ReplicatedJobs = []jobsetv1alpha2.ReplicatedJob{job(trainer.Node, tmpl, true)}
	}
	if r.retry != nil {
		limit := retryLimit(*r.retry, specPath.Child("template", "spec", "failurePolicy", "maxRestarts"), field.NewPath("retry"), 0, "the JobSet controller", &errs)
		if limit != nil {
			spec.FailurePolicy = &jobsetv1alpha2.FailurePolicy{MaxRestarts: *limit}
		}
	}
	if r.ttl != nil {
		s, err := seconds(*r.ttl, specPath.Child("template", "spec", "ttlSecondsAfterFinished"), false)
		if err != nil {
			errs = append(errs, err)
		}
		spec.TTLSecondsAfterFinished = ptr.To(int32(s))
	}
	out := &trainer.ClusterTrainingRuntime{
		TypeMeta:   metav1.TypeMeta{APIVersion: trainer.GroupVersion.String(), Kind: trainer.ClusterTrainingRuntimeKind},
		ObjectMeta: meta,
		Spec: trainer.TrainingRuntimeSpec{
			MLPolicy: policy,
			Template: trainer.JobSetTemplateSpec{Spec: spec},
		},
	}
	// Labels the pods carry that the JobSet must carry too (Ascend's
	// ring-controller.atlas).
	copyJobLabels(&out.Spec.Template.ObjectMeta, tmpl.Labels)
	if r.gang {
		out.Spec.PodGroupPolicy = &trainer.PodGroupPolicy{PodGroupPolicySource: trainer.PodGroupPolicySource{Volcano: &trainer.VolcanoPodGroupPolicySource{}}}
	}
	return out, dedupe(errs)
}

// asUser runs a pod template as the MPI runtime images' user, keeping a
// security context the pod settings gave.
func asUser(t *corev1.PodTemplateSpec) {
	if t.Spec.SecurityContext == nil {
		t.Spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if t.Spec.SecurityContext.FSGroup == nil {
		t.Spec.SecurityContext.FSGroup = ptr.To(int64(mpiUser))
	}
	c := &t.Spec.Containers[0]
	if c.SecurityContext == nil {
		c.SecurityContext = &corev1.SecurityContext{}
	}
	if c.SecurityContext.RunAsUser == nil {
		c.SecurityContext.RunAsUser = ptr.To(int64(mpiUser))
	}
}
