package cube

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	volcano "github.com/cubestudio/cube/internal/volcano/v1beta1"
)

// QueueWait says why a job of a release is not running although nothing
// is wrong with it: Kueue holds it in a queue, or took it off its nodes;
// or Volcano has not scheduled its gang.
type QueueWait struct {
	// Object is the release's object Kueue manages (its Workload's owner)
	// or whose gang Volcano schedules (its PodGroup's owner, or the owner
	// of that: a RayJob's RayCluster).
	Object ObjectRef
	// Workload is the name of Kueue's Workload for it, or of Volcano's
	// PodGroup.
	Workload string
	// Reason is Queued (waiting for quota, or in a Volcano queue),
	// Inadmissible (it cannot be admitted as it is: no such LocalQueue, a
	// stopped ClusterQueue, a request no flavor covers), Preempted or
	// Evicted (it ran and Kueue suspended it again; it queues anew), or
	// Unschedulable (Volcano let the gang in but cannot place all of its
	// pods).
	Reason string
	// Message explains it, e.g. "waiting for quota in ClusterQueue
	// team-a (nvidia.com/gpu: 4 of 4 in use, borrowing 0 of 2)" or "by a
	// workload of ClusterQueue team-b (reclamation within the cohort)".
	Message string
}

// The reasons of a QueueWait.
const (
	QueueQueued        = "Queued"
	QueueInadmissible  = "Inadmissible"
	QueuePreempted     = "Preempted"
	QueueEvicted       = "Evicted"
	QueueUnschedulable = "Unschedulable"
)

func (q QueueWait) String() string {
	if strings.HasPrefix(q.Message, "by ") {
		return q.Reason + " " + q.Message
	}
	return q.Reason + ": " + q.Message
}

var (
	workloadListGVK = kueue.GroupVersion.WithKind("WorkloadList")
	clusterQueueGVK = kueue.GroupVersion.WithKind("ClusterQueue")
)

// queueWaits reads the Kueue Workloads of the release's objects in its
// namespace and explains those that wait or were preempted. Without Kueue
// (no Workload kind) or the right to read Workloads there is nothing to
// explain; the ClusterQueue's usage is added when the caller may read it.
func (r *Release) queueWaits(ctx context.Context) ([]QueueWait, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(workloadListGVK)
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.List(ctx, list, client.InNamespace(r.Namespace))
	})
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list kueue workloads in %s: %w", r.Namespace, err)
	}
	owned := map[schema.GroupKind]map[string]ObjectRef{}
	for _, ref := range r.Objects {
		if ref.Namespace != r.Namespace {
			continue
		}
		gk := ref.GroupKind()
		if owned[gk] == nil {
			owned[gk] = map[string]ObjectRef{}
		}
		owned[gk][ref.Name] = ref
	}
	queues := map[string]*kueue.ClusterQueue{}
	var pods map[string]ObjectRef // the release's pods, read when a Workload is a pod's
	var out []QueueWait
	for i := range list.Items {
		var w kueue.Workload
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &w); err != nil {
			return nil, fmt.Errorf("read kueue workload %s/%s: %w", r.Namespace, list.Items[i].GetName(), err)
		}
		ref, ok := ownerIn(w.OwnerReferences, owned)
		if !ok && ownedByPod(w.OwnerReferences) {
			if pods == nil {
				if pods, err = r.podParents(ctx, owned); err != nil {
					return nil, err
				}
			}
			for _, o := range w.OwnerReferences {
				if o.Kind != "Pod" {
					continue
				}
				if ref, ok = pods[o.Name]; ok {
					break
				}
			}
		}
		if !ok {
			continue
		}
		name, err := r.clusterQueueOf(ctx, &w)
		if err != nil {
			return nil, err
		}
		cq, seen := queues[name]
		if !seen && name != "" {
			cq, err = r.clusterQueue(ctx, name)
			if err != nil {
				return nil, err
			}
			queues[name] = cq
		}
		if q, waits := explainWorkload(&w, name, cq); waits {
			q.Object = ref
			out = append(out, q)
		}
	}
	gangs, err := r.podGroupWaits(ctx, owned)
	if err != nil {
		return nil, err
	}
	out = append(out, gangs...)
	slices.SortFunc(out, func(a, b QueueWait) int { return strings.Compare(a.Workload, b.Workload) })
	return out, nil
}

// podGroupWaits reads the Volcano PodGroups of the release's objects (the
// training operator's and Volcano's own jobs own theirs; KubeRay's
// RayCluster, which the release's RayJob owns, owns its RayJob's) and
// explains those that wait. Without Volcano (no PodGroup kind) or the
// right to read them there is nothing to explain.
func (r *Release) podGroupWaits(ctx context.Context, owned map[schema.GroupKind]map[string]ObjectRef) ([]QueueWait, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(volcano.GroupVersion.WithKind("PodGroupList"))
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.List(ctx, list, client.InNamespace(r.Namespace))
	})
	switch {
	case meta.IsNoMatchError(err), apierrors.IsNotFound(err), apierrors.IsForbidden(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("list volcano podgroups in %s: %w", r.Namespace, err)
	}
	parents := map[metav1.OwnerReference][]metav1.OwnerReference{} // an owner's own owners, read once
	var out []QueueWait
	for i := range list.Items {
		var pg volcano.PodGroup
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &pg); err != nil {
			return nil, fmt.Errorf("read volcano podgroup %s/%s: %w", r.Namespace, list.Items[i].GetName(), err)
		}
		ref, ok := ownerIn(pg.OwnerReferences, owned)
		for _, o := range pg.OwnerReferences {
			if ok {
				break
			}
			up, seen := parents[o]
			if !seen {
				if up, err = r.ownersOf(ctx, o); err != nil {
					return nil, err
				}
				parents[o] = up
			}
			ref, ok = ownerIn(up, owned)
		}
		if !ok {
			continue
		}
		if q, waits := explainPodGroup(&pg); waits {
			q.Object = ref
			out = append(out, q)
		}
	}
	return out, nil
}

// ownersOf reads the owners of the object o refers to, in the release's
// namespace; none when it is gone or the caller may not read it.
func (r *Release) ownersOf(ctx context.Context, o metav1.OwnerReference) ([]metav1.OwnerReference, error) {
	gv, err := schema.ParseGroupVersion(o.APIVersion)
	if err != nil {
		return nil, nil
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gv.WithKind(o.Kind))
	err = r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: o.Name}, m)
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get %s %s/%s: %w", o.Kind, r.Namespace, o.Name, err)
	}
	return m.OwnerReferences, nil
}

// explainPodGroup says why a Volcano gang waits, from its phase and its
// last Unschedulable condition (volcano.sh/apis v1.14.0
// pkg/apis/scheduling/v1beta1/types.go; the scheduler's message reads
// "3/4 tasks in gang unschedulable: pod group is not ready, …"). A gang
// that runs or has completed does not wait, nor one in its queue whose
// pods are being created.
func explainPodGroup(pg *volcano.PodGroup) (QueueWait, bool) {
	q := QueueWait{Workload: pg.Name}
	var unschedulable *volcano.PodGroupCondition
	for i := range pg.Status.Conditions {
		if c := &pg.Status.Conditions[i]; c.Type == volcano.PodGroupUnschedulableType && c.Status == corev1.ConditionTrue {
			unschedulable = c
		}
	}
	why := ""
	if unschedulable != nil {
		why = unschedulable.Message
		if why == "" {
			why = unschedulable.Reason
		}
	}
	queue := pg.Spec.Queue
	if queue == "" {
		queue = "default" // Volcano's default queue (the PodGroup CRD's default)
	}
	gang := fmt.Sprintf("gang of %d", pg.Spec.MinMember)
	switch pg.Status.Phase {
	case volcano.PodGroupRunning, volcano.PodGroupCompleted:
		return q, false
	case volcano.PodGroupInqueue:
		if unschedulable == nil {
			return q, false
		}
		q.Reason, q.Message = QueueUnschedulable, "Volcano queue "+queue+" let the "+gang+" in, but its pods cannot all be placed: "+why
	case volcano.PodGroupUnknown:
		q.Reason = QueueUnschedulable
		q.Message = fmt.Sprintf("%d of the %s run, the rest cannot be placed", pg.Status.Running, gang)
		if why != "" {
			q.Message += ": " + why
		}
	case volcano.PodGroupPending:
		q.Reason, q.Message = QueueQueued, "waiting in Volcano queue "+queue+" ("+gang+")"
		if why != "" {
			q.Message += ": " + why
		}
	default:
		q.Reason, q.Message = QueueQueued, "Volcano's scheduler has not taken up the "+gang+" in queue "+queue+" yet"
	}
	return q, true
}

// ownerIn finds the release object that owns a Workload.
func ownerIn(owners []metav1.OwnerReference, owned map[schema.GroupKind]map[string]ObjectRef) (ObjectRef, bool) {
	for _, o := range owners {
		gv, err := schema.ParseGroupVersion(o.APIVersion)
		if err != nil {
			continue
		}
		if ref, ok := owned[schema.GroupKind{Group: gv.Group, Kind: o.Kind}][o.Name]; ok {
			return ref, true
		}
	}
	return ObjectRef{}, false
}

// ownedByPod says whether a Workload is a pod's: Kueue's pod integration
// makes one Workload per pod of a Deployment (pkg/controller/jobs/pod,
// the pod owns it; deployment_webhook.go gives the pods the queue label).
func ownedByPod(owners []metav1.OwnerReference) bool {
	return slices.ContainsFunc(owners, func(o metav1.OwnerReference) bool { return o.Kind == "Pod" && o.APIVersion == "v1" })
}

// podParents maps the names of the release's pods to the release object
// they belong to: the Deployment of their ReplicaSet, or the object that
// controls them. It reads metadata only; a pod of no release object, or
// what the caller may not read, is left out.
func (r *Release) podParents(ctx context.Context, owned map[schema.GroupKind]map[string]ObjectRef) (map[string]ObjectRef, error) {
	out := map[string]ObjectRef{}
	pods := &metav1.PartialObjectMetadataList{}
	pods.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.List(ctx, pods, client.InNamespace(r.Namespace), client.MatchingLabels{LabelRelease: r.Name})
	})
	switch {
	case apierrors.IsForbidden(err):
		return out, nil
	case err != nil:
		return nil, fmt.Errorf("list pods of release %s/%s: %w", r.Namespace, r.Name, err)
	}
	replicaSets := map[string]*metav1.OwnerReference{} // a ReplicaSet's controller, nil when unreadable
	for _, p := range pods.Items {
		c := metav1.GetControllerOf(&p)
		if c == nil {
			continue
		}
		gv, _ := schema.ParseGroupVersion(c.APIVersion)
		if ref, ok := owned[schema.GroupKind{Group: gv.Group, Kind: c.Kind}][c.Name]; ok {
			out[p.Name] = ref
			continue
		}
		if c.Kind != "ReplicaSet" || gv.Group != "apps" {
			continue
		}
		parent, seen := replicaSets[c.Name]
		if !seen {
			rs := &metav1.PartialObjectMetadata{}
			rs.SetGroupVersionKind(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"})
			err := r.client.retrying(ctx, func(ctx context.Context) error {
				return r.client.c.Get(ctx, client.ObjectKey{Namespace: r.Namespace, Name: c.Name}, rs)
			})
			switch {
			case apierrors.IsNotFound(err), apierrors.IsForbidden(err):
			case err != nil:
				return nil, fmt.Errorf("get replicaset %s/%s: %w", r.Namespace, c.Name, err)
			default:
				parent = metav1.GetControllerOf(rs)
			}
			replicaSets[c.Name] = parent
		}
		if parent == nil {
			continue
		}
		if ref, ok := owned[schema.GroupKind{Group: "apps", Kind: parent.Kind}][parent.Name]; ok {
			out[p.Name] = ref
		}
	}
	return out, nil
}

// clusterQueue reads a ClusterQueue; nil when the caller may not read it
// or it does not exist.
func (r *Release) clusterQueue(ctx context.Context, name string) (*kueue.ClusterQueue, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(clusterQueueGVK)
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.Get(ctx, client.ObjectKey{Name: name}, u)
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get kueue clusterqueue %s: %w", name, err)
	}
	cq := &kueue.ClusterQueue{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cq); err != nil {
		return nil, fmt.Errorf("read kueue clusterqueue %s: %w", name, err)
	}
	return cq, nil
}

// clusterQueueOf is the ClusterQueue a Workload was admitted to or, while
// it waits, the one its LocalQueue (spec.queueName) points at; "" when
// neither is known (no such LocalQueue, or the caller may not read it).
func (r *Release) clusterQueueOf(ctx context.Context, w *kueue.Workload) (string, error) {
	if w.Status.Admission != nil {
		return string(w.Status.Admission.ClusterQueue), nil
	}
	if w.Spec.QueueName == "" {
		return "", nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.GroupVersion.WithKind("LocalQueue"))
	err := r.client.retrying(ctx, func(ctx context.Context) error {
		return r.client.c.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: w.Spec.QueueName}, u)
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsForbidden(err), meta.IsNoMatchError(err):
		return "", nil
	case err != nil:
		return "", fmt.Errorf("get kueue localqueue %s/%s: %w", w.Namespace, w.Spec.QueueName, err)
	}
	cq, _, _ := unstructured.NestedString(u.Object, "spec", "clusterQueue")
	return cq, nil
}

// explainWorkload says why w waits, from its conditions (Kueue v0.17.0
// apis/kueue/v1beta2/workload_types.go: QuotaReserved, Admitted, Evicted,
// Preempted, Finished), with the usage of its ClusterQueue cq when known.
// A workload admitted and running, or finished, does not wait.
func explainWorkload(w *kueue.Workload, cqName string, cq *kueue.ClusterQueue) (QueueWait, bool) {
	q := QueueWait{Workload: w.Name}
	if meta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadFinished) {
		return q, false
	}
	reserved := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadQuotaReserved)
	evicted := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadEvicted)
	preempted := meta.FindStatusCondition(w.Status.Conditions, kueue.WorkloadPreempted)
	switch {
	case preempted != nil && preempted.Status == metav1.ConditionTrue:
		q.Reason, q.Message = QueuePreempted, preemptionMessage(preempted)
		return q, true
	case evicted != nil && evicted.Status == metav1.ConditionTrue:
		q.Reason, q.Message = QueueEvicted, evicted.Reason+": "+evicted.Message
		return q, true
	case meta.IsStatusConditionTrue(w.Status.Conditions, kueue.WorkloadAdmitted):
		return q, false
	case reserved != nil && reserved.Status == metav1.ConditionTrue:
		// Quota reserved, admission checks pending.
		q.Reason, q.Message = QueueQueued, "quota reserved in ClusterQueue "+cqName+", waiting for admission checks"
		return q, true
	case reserved != nil && reserved.Reason == kueue.WorkloadInadmissible:
		q.Reason, q.Message = QueueInadmissible, reserved.Message
		return q, true
	}
	q.Reason = QueueQueued
	where := "waiting for quota"
	switch {
	case cq != nil:
		where += " in ClusterQueue " + cq.Name
		message := ""
		if reserved != nil {
			message = reserved.Message
		}
		if usage := quotaUsage(w, cq, short(message)); usage != "" {
			where += " (" + usage + ")"
		}
	case cqName != "":
		where += " in ClusterQueue " + cqName
	}
	if reserved != nil && reserved.Message != "" {
		where += ": " + reserved.Message
	}
	q.Message = where
	return q, true
}

// preemptionMessage turns Kueue's "Preempted to accommodate a workload
// (UID: …, JobUID: …) due to <reason>; preemptor path: /cohort/cq;
// preemptee path: …" (pkg/scheduler/preemption/preemption.go,
// preemptionMessage) into "by a workload of ClusterQueue cq (<reason>)";
// a message of another shape is kept whole.
func preemptionMessage(c *metav1.Condition) string {
	msg := c.Message
	_, afterDue, ok1 := strings.Cut(msg, " due to ")
	reason, rest, ok2 := strings.Cut(afterDue, "; preemptor path: ")
	path, _, _ := strings.Cut(rest, ";")
	if !ok1 || !ok2 || path == "" {
		if msg == "" {
			return "by Kueue (" + c.Reason + ")"
		}
		return "by Kueue: " + msg
	}
	queue := path[strings.LastIndex(path, "/")+1:]
	return "by a workload of ClusterQueue " + queue + " (" + reason + ")"
}

// insufficient finds the resources Kueue's message says the quota is
// short of: "couldn't assign flavors to pod set worker: insufficient
// quota for nvidia.com/gpu in flavor cube-t4, …"
// (pkg/scheduler/flavorassigner/flavorassigner.go).
var insufficient = regexp.MustCompile(`insufficient (?:unused )?quota (?:in cohort )?for ([^\s,]+)`)

// short returns the resources a message of Kueue's says the quota is
// short of, each once, in order.
func short(message string) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, m := range insufficient.FindAllStringSubmatch(message, -1) {
		if r := corev1.ResourceName(m[1]); !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

// quotaUsage renders, for each resource w requests (or only those the
// ClusterQueue is short of, when Kueue's message names them), the ClusterQueue's
// use of it over all its flavors against their nominal quota, and what it
// borrows against its borrowing limit: "nvidia.com/gpu: 4 of 4 in use,
// borrowing 0 of 2". A resource without a borrowing limit borrows "of
// what the cohort lends"; one outside a cohort says nothing of borrowing.
func quotaUsage(w *kueue.Workload, cq *kueue.ClusterQueue, only []corev1.ResourceName) string {
	wanted := map[corev1.ResourceName]bool{}
	for _, r := range only {
		wanted[r] = true
	}
	for _, ps := range w.Spec.PodSets {
		if len(only) > 0 {
			break
		}
		for _, c := range append(slices.Clone(ps.Template.Spec.InitContainers), ps.Template.Spec.Containers...) {
			for r := range c.Resources.Requests {
				wanted[r] = true
			}
		}
	}
	type sums struct {
		nominal, used, borrowed, limit resource.Quantity
		unlimited, covered             bool
	}
	by := map[corev1.ResourceName]*sums{}
	for _, g := range cq.Spec.ResourceGroups {
		for _, f := range g.Flavors {
			for _, rq := range f.Resources {
				s := by[rq.Name]
				if s == nil {
					s = &sums{}
					by[rq.Name] = s
				}
				s.covered = true
				s.nominal.Add(rq.NominalQuota)
				if rq.BorrowingLimit == nil {
					s.unlimited = true
				} else {
					s.limit.Add(*rq.BorrowingLimit)
				}
			}
		}
	}
	usage := cq.Status.FlavorsReservation
	if len(usage) == 0 {
		usage = cq.Status.FlavorsUsage
	}
	for _, f := range usage {
		for _, ru := range f.Resources {
			if s := by[ru.Name]; s != nil {
				s.used.Add(ru.Total)
				s.borrowed.Add(ru.Borrowed)
			}
		}
	}
	var parts []string
	for _, r := range slices.Sorted(maps.Keys(wanted)) {
		s := by[r]
		if s == nil || !s.covered {
			continue
		}
		part := fmt.Sprintf("%s: %s of %s in use", r, s.used.String(), s.nominal.String())
		if cq.Spec.CohortName != "" {
			if s.unlimited {
				part += fmt.Sprintf(", borrowing %s of what cohort %s lends", s.borrowed.String(), cq.Spec.CohortName)
			} else {
				part += fmt.Sprintf(", borrowing %s of %s", s.borrowed.String(), s.limit.String())
			}
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, "; ")
}
