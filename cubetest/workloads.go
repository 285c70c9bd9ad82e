package cubetest

import (
	"context"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	rayv1 "github.com/ray-project/kuberay/ray-operator/apis/ray/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"
	vcbatch "volcano.sh/apis/pkg/apis/batch/v1alpha1"
)

// podRole is one pod template of a workload, the number of pods its
// controller keeps from it and the names it gives them.
type podRole struct {
	template corev1.PodTemplateSpec
	replicas int32
	name     func(i int32) string
}

// podRoles are the pods the controller of u creates (the kinds
// createsPods lists):
//
//   - Deployment: spec.replicas pods of its ReplicaSet "<name>-<hash>",
//     named "<replicaset>-<5 random>" (the ReplicaSet's generateName);
//   - StatefulSet: spec.replicas pods "<name>-<ordinal>";
//   - Job: spec.parallelism pods at once (at most spec.completions),
//     "<name>-<5 random>";
//   - the training-operator jobs: each role of spec.*ReplicaSpecs, its
//     replicas (1 unless set), "<job>-<role in lower case>-<index>"
//     (training-operator v1.8.1 pkg/core/utils.go, GenGeneralName);
//   - LeaderWorkerSet: spec.replicas groups (1 unless set), each a leader
//     "<name>-<group>" from leaderTemplate (workerTemplate when unset),
//     a pod of the leader StatefulSet "<name>", and size-1 workers
//     "<name>-<group>-<index>" from workerTemplate, pods of the group's
//     StatefulSet "<name>-<group>" (sigs.k8s.io/lws v0.8.0
//     pkg/controllers/leaderworkerset_controller.go, the leader
//     StatefulSet named after the set; pod_controller.go, the workers');
//   - Volcano Job: each of spec.tasks, its replicas, "<job>-<task>-<index>"
//     (volcano v1.14.0 pkg/controllers/job/helpers/helpers.go,
//     MakePodName);
//   - RayJob: the pods of the RayCluster it makes, "<rayjob>-<5 random>"
//     (rayCluster): the head "<cluster>-head-<5 random>", then each worker
//     group's replicas "<cluster>-<group>-worker-<5 random>" (KubeRay
//     v1.5.0 ray-operator/controllers/ray/raycluster_controller.go,
//     buildHeadPod and buildWorkerPod; utils/util.go, PodName). The
//     templates are taken as they are: the init container KubeRay adds to
//     workers to wait for the head is not counted, nor the submitter Job,
//     which KubeRay creates once the cluster is up.
func podRoles(u *unstructured.Unstructured) ([]podRole, error) {
	name := u.GetName()
	random := func(prefix string) func(int32) string {
		return func(int32) string { return prefix + "-" + rand.String(5) }
	}
	switch gk := u.GroupVersionKind().GroupKind(); {
	case gk == schema.GroupKind{Group: "apps", Kind: "Deployment"}:
		d := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, d); err != nil {
			return nil, err
		}
		hash, err := templateHash(u)
		if err != nil {
			return nil, err
		}
		return []podRole{{d.Spec.Template, replicasOf(d.Spec.Replicas), random(name + "-" + hash)}}, nil
	case gk == schema.GroupKind{Group: "apps", Kind: "StatefulSet"}:
		s := &appsv1.StatefulSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
			return nil, err
		}
		return []podRole{{s.Spec.Template, replicasOf(s.Spec.Replicas), func(i int32) string { return fmt.Sprintf("%s-%d", name, i) }}}, nil
	case gk == schema.GroupKind{Group: "batch", Kind: "Job"}:
		j := &batchv1.Job{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j); err != nil {
			return nil, err
		}
		n := replicasOf(j.Spec.Parallelism)
		if j.Spec.Completions != nil && *j.Spec.Completions < n {
			n = *j.Spec.Completions
		}
		return []podRole{{j.Spec.Template, n, random(name)}}, nil
	case gk == lwsKind:
		l := &lwsv1.LeaderWorkerSet{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, l); err != nil {
			return nil, err
		}
		lt := l.Spec.LeaderWorkerTemplate
		leader := lt.WorkerTemplate
		if lt.LeaderTemplate != nil {
			leader = *lt.LeaderTemplate
		}
		size := replicasOf(lt.Size)
		var roles []podRole
		for g := range replicasOf(l.Spec.Replicas) {
			roles = append(roles, podRole{leader, 1, func(int32) string { return fmt.Sprintf("%s-%d", name, g) }})
			if size > 1 {
				roles = append(roles, podRole{lt.WorkerTemplate, size - 1, func(i int32) string { return fmt.Sprintf("%s-%d-%d", name, g, i+1) }})
			}
		}
		return roles, nil
	case gk == volcanoJobKind:
		j := &vcbatch.Job{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j); err != nil {
			return nil, err
		}
		var roles []podRole
		for _, task := range j.Spec.Tasks {
			roles = append(roles, podRole{task.Template, task.Replicas, func(i int32) string { return fmt.Sprintf("%s-%s-%d", name, task.Name, i) }})
		}
		return roles, nil
	case gk == rayJobKind:
		j := &rayv1.RayJob{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, j); err != nil {
			return nil, err
		}
		if j.Spec.RayClusterSpec == nil {
			return nil, nil // it runs on a cluster that exists (clusterSelector)
		}
		cluster := rayCluster(u)
		roles := []podRole{{j.Spec.RayClusterSpec.HeadGroupSpec.Template, 1, random(cluster + "-head")}}
		for _, g := range j.Spec.RayClusterSpec.WorkerGroupSpecs {
			roles = append(roles, podRole{g.Template, replicasOf(g.Replicas), random(cluster + "-" + g.GroupName + "-worker")})
		}
		return roles, nil
	case gk.Group == "kubeflow.org":
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		var roles []podRole
		for _, field := range slices.Sorted(maps.Keys(spec)) {
			specs, ok := spec[field].(map[string]any)
			if !strings.HasSuffix(field, "ReplicaSpecs") || !ok {
				continue
			}
			for _, role := range slices.Sorted(maps.Keys(specs)) {
				rs, _ := specs[role].(map[string]any)
				r := podRole{replicas: 1}
				if n, ok, _ := unstructured.NestedInt64(rs, "replicas"); ok {
					r.replicas = int32(n)
				}
				tmpl, _, _ := unstructured.NestedMap(rs, "template")
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &r.template); err != nil {
					return nil, fmt.Errorf("spec.%s.%s.template: %w", field, role, err)
				}
				prefix := name + "-" + strings.ToLower(role)
				r.name = func(i int32) string { return fmt.Sprintf("%s-%d", prefix, i) }
				roles = append(roles, r)
			}
		}
		return roles, nil
	}
	return nil, nil
}

// runsToCompletion are the kinds whose pods end when the workload does:
// they count no more once it has succeeded or failed.
func runsToCompletion(gk schema.GroupKind) bool {
	return createsPods(gk) && (gk.Group == "batch" || gk.Group == "kubeflow.org" || gk == volcanoJobKind || gk == rayJobKind)
}

// The kinds of the workloads played here beside Kubernetes' own and the
// training-operator's: LeaderWorkerSet, a serving workload whose pods run
// until it is deleted, Volcano's Job and KubeRay's RayJob.
var (
	lwsKind        = schema.GroupKind{Group: lwsv1.GroupVersion.Group, Kind: "LeaderWorkerSet"}
	volcanoJobKind = schema.GroupKind{Group: vcbatch.SchemeGroupVersion.Group, Kind: "Job"}
	rayJobKind     = schema.GroupKind{Group: rayv1.GroupVersion.Group, Kind: "RayJob"}
)

// suspended reports whether u is a job its controller keeps without pods:
// spec.suspend (a Job, a RayJob, a JobSet) or spec.runPolicy.suspend (the
// training-operator's jobs), as Kueue sets them while a job waits.
func suspended(u *unstructured.Unstructured) bool {
	s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
	r, _, _ := unstructured.NestedBool(u.Object, "spec", "runPolicy", "suspend")
	return s || r
}

// rayCluster is the name of the RayCluster KubeRay makes for the RayJob
// u, "<rayjob>-<5 random characters>" (KubeRay v1.5.0
// ray-operator/controllers/ray/utils/util.go, GenerateRayClusterName):
// here the characters come from a hash of the RayJob's UID in
// rand.SafeEncodeString's alphabet, as templateHash's do, so that its pods
// and its refusals name the same cluster.
func rayCluster(u *unstructured.Unstructured) string {
	h := fnv.New32a()
	h.Write([]byte(u.GetUID()))
	return u.GetName() + "-" + rand.SafeEncodeString(fmt.Sprintf("%010d", h.Sum32()))[5:]
}

// makePods plays the controller of u creating its pods through the
// admission chain: each pod takes the namespace's LimitRange defaults and
// must pass its bounds, its Pod Security level and its quotas; the pods
// admitted count against the quotas from then on. At the first pod the
// API server would refuse, the controller records the event it records
// (RefusePods' events, with the server's answer) and the workload is
// refused: Mark and the reactions will not make it Ready or Succeeded.
// An apply of a workload that exists recounts its pods, unless it ran to
// completion; a suspended job has none.
func (a *admission) makePods(ctx context.Context, u *unstructured.Unstructured) error {
	roles, err := podRoles(u)
	if err != nil {
		return err
	}
	ns := &corev1.Namespace{}
	if err := a.inner.Get(ctx, client.ObjectKey{Name: u.GetNamespace()}, ns); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old := a.workloads[keyOf(u)]; old != nil && old.ended {
		return nil // a job that ended makes no pods again
	}
	w := &workloadPods{usage: corev1.ResourceList{}}
	a.workloads[keyOf(u)] = w
	if suspended(u) {
		return nil // a suspended job has no pods (Kueue holds it)
	}
	refused := ""
roles:
	for _, r := range roles {
		for i := range r.replicas {
			p := &corev1.Pod{ObjectMeta: *r.template.ObjectMeta.DeepCopy(), Spec: *r.template.Spec.DeepCopy()}
			p.Name, p.Namespace = r.name(i), u.GetNamespace()
			if err := a.admitPod(ctx, ns, p); err != nil {
				if !apierrors.IsForbidden(err) {
					return err
				}
				refused = err.Error()
				break roles
			}
			usage := podUsage(p)
			msg, err := a.checkQuotas(ctx, p.Namespace, p, usage)
			if err != nil {
				return err
			}
			if msg != "" {
				refused = apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, p.Name, fmt.Errorf("%s", msg)).Error()
				break roles
			}
			add(w.usage, usage)
		}
	}
	if refused == "" {
		return nil
	}
	w.refused = refused
	events, err := refusalEvents(u, refused)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if err := record(ctx, a.inner, ev); err != nil {
			return err
		}
	}
	return nil
}

// refusal is the API server's answer to the first pod of the object at
// ref it refused, or "".
func (a *admission) refusal(ref objectKey) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.workloads[ref]; w != nil {
		return w.refused
	}
	return ""
}

// ended records that the workload at ref ran to completion.
func (a *admission) ended(ref objectKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.workloads[ref]; w != nil {
		w.ended = true
	}
}
