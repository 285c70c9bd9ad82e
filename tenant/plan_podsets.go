package tenant

import (
	"fmt"
	"slices"
	"strings"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	jobsetv1alpha2 "sigs.k8s.io/jobset/api/jobset/v1alpha2"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/internal/podspec"
)

// kueueWorkload is one Workload Kueue would make for an object: its pod
// sets as Kueue v0.17.0's integration of the kind computes them, and the
// LocalQueue the object's label names.
type kueueWorkload struct {
	object cube.ObjectRef
	// index and of number the Workloads of an object that has several
	// (a Deployment's pods, a LeaderWorkerSet's groups); of is 1 else.
	index, of  int
	localQueue string
	podSets    []kueue.PodSet
	// unplanned says why cube cannot compute the pod sets ("" when it can).
	unplanned string
}

// The kinds whose objects Kueue queues, by the integrations of Kueue
// v0.17.0 (pkg/controller/jobs/*), and how many pods each holds.
var (
	gvkJob         = batchv1.SchemeGroupVersion.WithKind("Job")
	gvkDeployment  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	gvkStatefulSet = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	gvkPod         = corev1.SchemeGroupVersion.WithKind("Pod")
	gvkLWS         = lwsv1.SchemeGroupVersion.WithKind("LeaderWorkerSet")
	gvkJobSet      = jobsetv1alpha2.SchemeGroupVersion.WithKind("JobSet")
	gvkRayJob      = rayv1.SchemeGroupVersion.WithKind("RayJob")
	gvkRayCluster  = rayv1.SchemeGroupVersion.WithKind("RayCluster")
	gvkTrainJob    = schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}
)

// kubeflowOrder is the order of each training-operator v1 kind's replica
// types, Kueue's OrderedReplicaTypes (pkg/controller/jobs/kubeflow/jobs/
// */…_controller.go): the pod sets follow it.
var kubeflowOrder = map[string][]kubeflowv1.ReplicaType{
	kubeflowv1.PyTorchJobKind: {kubeflowv1.PyTorchJobReplicaTypeMaster, kubeflowv1.PyTorchJobReplicaTypeWorker},
	kubeflowv1.TFJobKind: {kubeflowv1.TFJobReplicaTypeChief, kubeflowv1.TFJobReplicaTypeMaster, kubeflowv1.TFJobReplicaTypePS,
		kubeflowv1.TFJobReplicaTypeWorker, kubeflowv1.TFJobReplicaTypeEval},
	kubeflowv1.XGBoostJobKind: {kubeflowv1.XGBoostJobReplicaTypeMaster, kubeflowv1.XGBoostJobReplicaTypeWorker},
	kubeflowv1.PaddleJobKind:  {kubeflowv1.PaddleJobReplicaTypeMaster, kubeflowv1.PaddleJobReplicaTypeWorker},
}

// kueueWorkloads returns the Workloads Kueue would make for obj, or none
// when Kueue does not queue its kind. namespace is the one of an object
// without its own.
func kueueWorkloads(obj client.Object, namespace string) ([]kueueWorkload, error) {
	u, err := cube.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	ref := cube.RefOf(u)
	if ref.Namespace == "" {
		ref.Namespace = namespace
	}
	one := kueueWorkload{object: ref, index: 1, of: 1, localQueue: u.GetLabels()[podspec.KueueQueueLabel]}
	from := func(into any) error {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
			return fmt.Errorf("read %s: %w", ref, err)
		}
		return nil
	}
	gvk := ref.GroupVersionKind
	switch {
	case gvk == gvkJob:
		var j batchv1.Job
		if err := from(&j); err != nil {
			return nil, err
		}
		// pkg/controller/jobs/job/job_controller.go, PodSets and
		// podsCount: parallelism (default 1), at most completions.
		count := deref(j.Spec.Parallelism, 1)
		if j.Spec.Completions != nil && *j.Spec.Completions < count {
			count = *j.Spec.Completions
		}
		one.podSets = []kueue.PodSet{{Name: "main", Count: count, Template: j.Spec.Template}}
	case gvk.Group == kubeflowv1.GroupVersion.Group && kubeflowOrder[gvk.Kind] != nil:
		specs, err := kubeflowReplicas(u.Object, gvk.Kind)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", ref, err)
		}
		// kubeflowjob_controller.go PodSets: a pod set per replica type
		// present, named in lower case, of its replicas (default 1).
		for _, rt := range kubeflowOrder[gvk.Kind] {
			if s, ok := specs[rt]; ok && s != nil {
				one.podSets = append(one.podSets, kueue.PodSet{Name: strings.ToLower(string(rt)), Count: deref(s.Replicas, 1), Template: s.Template})
			}
		}
	case gvk == gvkRayJob:
		var j rayv1.RayJob
		if err := from(&j); err != nil {
			return nil, err
		}
		if j.Spec.RayClusterSpec == nil {
			one.unplanned = "a RayJob on an existing RayCluster (clusterSelector) is not queued by Kueue itself"
			break
		}
		one.podSets = rayPodSets(j.Spec.RayClusterSpec)
		// rayjob_controller.go addSubmitterPodSet and getSubmitterTemplate:
		// the submitter Job of K8sJobMode is a pod set of its own.
		if j.Spec.SubmissionMode == rayv1.K8sJobMode || j.Spec.SubmissionMode == "" {
			one.podSets = append(one.podSets, kueue.PodSet{Name: "submitter", Count: 1, Template: submitterTemplate(&j)})
		}
	case gvk == gvkRayCluster:
		var c rayv1.RayCluster
		if err := from(&c); err != nil {
			return nil, err
		}
		one.podSets = rayPodSets(&c.Spec)
	case gvk == gvkJobSet:
		var js jobsetv1alpha2.JobSet
		if err := from(&js); err != nil {
			return nil, err
		}
		// jobset_controller.go PodSets: replicas × the pods of one Job
		// (PodsCountPerReplica: parallelism, at most completions).
		for _, rj := range js.Spec.ReplicatedJobs {
			perJob := deref(rj.Template.Spec.Parallelism, 1)
			if c := rj.Template.Spec.Completions; c != nil && *c < perJob {
				perJob = *c
			}
			one.podSets = append(one.podSets, kueue.PodSet{Name: rj.Name, Count: rj.Replicas * perJob, Template: rj.Template.Spec.Template})
		}
	case gvk == gvkLWS:
		var l lwsv1.LeaderWorkerSet
		if err := from(&l); err != nil {
			return nil, err
		}
		// leaderworkerset_reconciler.go: one Workload per group
		// (replicas, default 1), whose pod sets are the leader (1) and
		// the workers (size-1), or "main" of size pods without a leader
		// template.
		size := deref(l.Spec.LeaderWorkerTemplate.Size, 1)
		var sets []kueue.PodSet
		if lt := l.Spec.LeaderWorkerTemplate.LeaderTemplate; lt != nil {
			sets = append(sets, kueue.PodSet{Name: "leader", Count: 1, Template: *lt},
				kueue.PodSet{Name: "worker", Count: size - 1, Template: l.Spec.LeaderWorkerTemplate.WorkerTemplate})
		} else {
			sets = append(sets, kueue.PodSet{Name: "main", Count: size, Template: l.Spec.LeaderWorkerTemplate.WorkerTemplate})
		}
		return replicated(one, int(deref(l.Spec.Replicas, 1)), sets), nil
	case gvk == gvkStatefulSet:
		var s appsv1.StatefulSet
		if err := from(&s); err != nil {
			return nil, err
		}
		// statefulset_reconciler.go: the StatefulSet's pods are one pod
		// group, admitted together.
		one.podSets = []kueue.PodSet{{Name: "main", Count: deref(s.Spec.Replicas, 1), Template: s.Spec.Template}}
	case gvk == gvkDeployment:
		var d appsv1.Deployment
		if err := from(&d); err != nil {
			return nil, err
		}
		// deployment_webhook.go gives the pods the queue label; each pod
		// is then a Workload of its own (the pod integration).
		return replicated(one, int(deref(d.Spec.Replicas, 1)), []kueue.PodSet{{Name: "main", Count: 1, Template: d.Spec.Template}}), nil
	case gvk == gvkPod:
		var p corev1.Pod
		if err := from(&p); err != nil {
			return nil, err
		}
		one.podSets = []kueue.PodSet{{Name: "main", Count: 1, Template: corev1.PodTemplateSpec{ObjectMeta: p.ObjectMeta, Spec: p.Spec}}}
	case gvk.GroupKind() == gvkTrainJob.GroupKind():
		one.unplanned = "the pods of a TrainJob follow its training runtime, which cube does not read before submit"
	default:
		return nil, nil
	}
	return []kueueWorkload{one}, nil
}

// replicated is n Workloads of the same pod sets, numbered.
func replicated(one kueueWorkload, n int, sets []kueue.PodSet) []kueueWorkload {
	out := make([]kueueWorkload, 0, n)
	for i := range n {
		w := one
		w.index, w.of = i+1, n
		w.podSets = sets
		out = append(out, w)
	}
	return out
}

// kubeflowReplicas reads the replica specs of a training-operator v1 job
// of kind (spec.<kind in lower case>ReplicaSpecs, e.g.
// pytorchReplicaSpecs).
func kubeflowReplicas(obj map[string]any, kind string) (map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec, error) {
	switch kind {
	case kubeflowv1.PyTorchJobKind:
		var j kubeflowv1.PyTorchJob
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &j)
		return j.Spec.PyTorchReplicaSpecs, err
	case kubeflowv1.TFJobKind:
		var j kubeflowv1.TFJob
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &j)
		return j.Spec.TFReplicaSpecs, err
	case kubeflowv1.XGBoostJobKind:
		var j kubeflowv1.XGBoostJob
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &j)
		return j.Spec.XGBReplicaSpecs, err
	case kubeflowv1.PaddleJobKind:
		var j kubeflowv1.PaddleJob
		err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &j)
		return j.Spec.PaddleReplicaSpecs, err
	}
	return nil, nil
}

// rayPodSets are a Ray cluster's pod sets (pkg/controller/jobs/raycluster
// BuildPodSets): the head (1) and each worker group, of replicas (default
// 1) times its hosts.
func rayPodSets(spec *rayv1.RayClusterSpec) []kueue.PodSet {
	sets := []kueue.PodSet{{Name: "head", Count: 1, Template: spec.HeadGroupSpec.Template}}
	for _, g := range spec.WorkerGroupSpecs {
		count := deref(g.Replicas, 1)
		if g.NumOfHosts > 1 {
			count *= g.NumOfHosts
		}
		sets = append(sets, kueue.PodSet{Name: strings.ToLower(g.GroupName), Count: count, Template: g.Template})
	}
	return sets
}

// submitterTemplate is the pod of a RayJob's submitter Job as Kueue counts
// it (rayjob_controller.go getSubmitterTemplate): the job's own
// submitterPodTemplate, or Kueue's default of 500m CPU and 200Mi.
func submitterTemplate(j *rayv1.RayJob) corev1.PodTemplateSpec {
	if j.Spec.SubmitterPodTemplate != nil {
		return *j.Spec.SubmitterPodTemplate
	}
	return corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "ray-job-submitter",
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("200Mi")},
		},
	}}}}
}

func deref(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}

// isPodSetKind says whether obj is of a kind whose pods Kueue could queue:
// a workload of such a kind without the queue label is not queued.
func isPodSetKind(gvk schema.GroupVersionKind) bool {
	return slices.Contains([]schema.GroupVersionKind{gvkJob, gvkDeployment, gvkStatefulSet, gvkPod, gvkLWS, gvkJobSet, gvkRayJob, gvkRayCluster}, gvk) ||
		gvk.GroupKind() == gvkTrainJob.GroupKind() ||
		(gvk.Group == kubeflowv1.GroupVersion.Group && kubeflowOrder[gvk.Kind] != nil)
}
