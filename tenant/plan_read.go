package tenant

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/internal/podspec"
)

// kueueQueueLabel is the label that puts an object in a LocalQueue.
const kueueQueueLabel = podspec.KueueQueueLabel

// Plan says, before anything is applied, whether and where Kueue would
// admit each of the workloads now: one Admission per Workload Kueue
// would make for them (a job is one; each pod of a Deployment and each
// group of a LeaderWorkerSet is one), in order, each planned as if those
// before it that Kueue admits had been admitted. It reads the LocalQueue
// each object's label names (LocalQueue on the builder), the ClusterQueue
// it points at and those of its cohort, the ResourceFlavors and the
// namespace's LimitRanges through r, a controller-runtime reader (the
// client cube.NewFromClient wraps, or client.New); it writes nothing.
// namespace is that of the objects that name none: for a tenant made
// with New(name), name.
//
// The answer is computed as Kueue v0.17.0 assigns flavors
// (pkg/scheduler/flavorassigner) from the ClusterQueues' reserved quota
// (status.flavorsReservation), with Kueue's default flavor fungibility,
// in cohorts without a parent or quota of their own (those tenants make).
// It is the state of the moment: workloads already pending ahead of these
// are not counted, and whether Kueue finds workloads to preempt
// (MayPreempt) depends on their priorities.
func Plan(ctx context.Context, r client.Reader, namespace string, ws ...cube.Workload) ([]Admission, error) {
	if r == nil {
		return nil, fmt.Errorf("plan: no reader")
	}
	var wls []kueueWorkload
	for i, w := range ws {
		if w == nil {
			return nil, fmt.Errorf("plan: workload %d is nil", i)
		}
		objs, err := w.Objects()
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if obj == nil {
				return nil, fmt.Errorf("plan: workload %d has a nil object", i)
			}
			found, err := kueueWorkloads(obj, namespace)
			if err != nil {
				return nil, err
			}
			wls = append(wls, found...)
		}
	}
	st, err := readKueue(ctx, r, wls)
	if err != nil {
		return nil, err
	}
	return plan(st, wls), nil
}

// readKueue reads what plan needs for the workloads.
func readKueue(ctx context.Context, r client.Reader, wls []kueueWorkload) (*kueueState, error) {
	st := &kueueState{
		namespaces:    map[string]map[string]string{},
		localQueues:   map[string]map[string]*kueue.LocalQueue{},
		clusterQueues: map[string]*kueue.ClusterQueue{},
		flavors:       map[string]*kueue.ResourceFlavor{},
		limitRanges:   map[string][]corev1.LimitRange{},
	}
	queued := false
	for _, w := range wls {
		if w.localQueue == "" || w.unplanned != "" {
			continue
		}
		queued = true
		ns := w.object.Namespace
		if _, seen := st.namespaces[ns]; !seen {
			var n corev1.Namespace
			if err := r.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil && !apierrors.IsNotFound(err) {
				return nil, fmt.Errorf("get namespace %s: %w", ns, err)
			}
			// The API server sets kubernetes.io/metadata.name on every
			// namespace (the label a tenant's ClusterQueue selects).
			nsLabels := maps.Clone(n.Labels)
			if nsLabels == nil {
				nsLabels = map[string]string{}
			}
			nsLabels[corev1.LabelMetadataName] = ns
			st.namespaces[ns] = nsLabels
			var lrs corev1.LimitRangeList
			if err := r.List(ctx, &lrs, client.InNamespace(ns)); err != nil {
				return nil, fmt.Errorf("list limitranges in %s: %w", ns, err)
			}
			st.limitRanges[ns] = lrs.Items
			st.localQueues[ns] = map[string]*kueue.LocalQueue{}
		}
		if _, seen := st.localQueues[ns][w.localQueue]; seen {
			continue
		}
		lq := &kueue.LocalQueue{}
		switch err := getKueue(ctx, r, client.ObjectKey{Namespace: ns, Name: w.localQueue}, "LocalQueue", lq); {
		case apierrors.IsNotFound(err):
			lq = nil
		case err != nil:
			return nil, err
		}
		st.localQueues[ns][w.localQueue] = lq
	}
	if !queued {
		return st, nil
	}
	// Every ClusterQueue: the cohorts' quota and use, which a
	// ClusterQueue's borrowing depends on.
	if err := listKueue(ctx, r, "ClusterQueueList", func(u *unstructured.Unstructured) error {
		cq := &kueue.ClusterQueue{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, cq); err != nil {
			return fmt.Errorf("read kueue clusterqueue %s: %w", u.GetName(), err)
		}
		st.clusterQueues[cq.Name] = cq
		return nil
	}); err != nil {
		return nil, err
	}
	if err := listKueue(ctx, r, "ResourceFlavorList", func(u *unstructured.Unstructured) error {
		f := &kueue.ResourceFlavor{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, f); err != nil {
			return fmt.Errorf("read kueue resourceflavor %s: %w", u.GetName(), err)
		}
		st.flavors[f.Name] = f
		return nil
	}); err != nil {
		return nil, err
	}
	// A cohort of Kueue's Cohort kind with a parent or quota of its own
	// shares quota along a tree this plan does not follow.
	cohorts := map[string]bool{}
	for _, cq := range st.clusterQueues {
		if cq.Spec.CohortName != "" {
			cohorts[string(cq.Spec.CohortName)] = true
		}
	}
	for name := range cohorts {
		c := &unstructured.Unstructured{}
		c.SetGroupVersionKind(kueue.GroupVersion.WithKind("Cohort"))
		err := r.Get(ctx, client.ObjectKey{Name: name}, c)
		switch {
		case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("get kueue cohort %s: %w", name, err)
		}
		parent, _, _ := unstructured.NestedString(c.Object, "spec", "parentName")
		groups, _, _ := unstructured.NestedSlice(c.Object, "spec", "resourceGroups")
		if parent != "" || len(groups) > 0 {
			return nil, fmt.Errorf("plan: cohort %s has a parent or quota of its own (a Kueue Cohort object); Plan covers cohorts of ClusterQueues only", name)
		}
	}
	return st, nil
}

// getKueue reads a Kueue object of kind into into.
func getKueue(ctx context.Context, r client.Reader, key client.ObjectKey, kind string, into any) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(kueue.GroupVersion.WithKind(kind))
	if err := r.Get(ctx, key, u); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("kueue is not installed (no %s kind): %w", kind, err)
		}
		if apierrors.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("get kueue %s %s: %w", kind, key, err)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into); err != nil {
		return fmt.Errorf("read kueue %s %s: %w", kind, key, err)
	}
	return nil
}

// listKueue lists a Kueue kind cluster-wide.
func listKueue(ctx context.Context, r client.Reader, kind string, each func(*unstructured.Unstructured) error) error {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(kueue.GroupVersion.WithKind(kind))
	if err := r.List(ctx, list); err != nil {
		if meta.IsNoMatchError(err) {
			return fmt.Errorf("kueue is not installed (no %s kind): %w", kind, err)
		}
		return fmt.Errorf("list kueue %s: %w", kind, err)
	}
	for i := range list.Items {
		if err := each(&list.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

// podRequests is what Kueue counts for one pod of spec: the container
// defaults of the namespace's LimitRanges filled in and limits standing
// for missing requests (Kueue v0.17.0 pkg/workload/resources.go,
// AdjustResources), then the pod's requests as the scheduler sums them
// (k8s.io/component-helpers resource.PodRequests, which Kueue's
// totalRequestsFromPodSets calls): the containers, the restartable init
// containers (sidecars) beside them, the largest other init container
// with the sidecars started before it, and the pod overhead.
func podRequests(spec corev1.PodSpec, limitRanges []corev1.LimitRange) corev1.ResourceList {
	var defLimits, defRequests corev1.ResourceList
	for _, lr := range limitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			defLimits = keepFirst(defLimits, item.Default)
			defRequests = keepFirst(defRequests, item.DefaultRequest)
		}
	}
	adjust := func(c corev1.Container) corev1.ResourceList {
		limits := keepFirst(c.Resources.Limits, defLimits)
		return keepFirst(keepFirst(c.Resources.Requests, defRequests), limits)
	}
	reqs := corev1.ResourceList{}
	for _, c := range spec.Containers {
		addTo(reqs, adjust(c))
	}
	sidecars := corev1.ResourceList{}
	inits := corev1.ResourceList{}
	for _, c := range spec.InitContainers {
		cr := adjust(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			addTo(reqs, cr)
			addTo(sidecars, cr)
			cr = sidecars.DeepCopy()
		} else {
			cr = cr.DeepCopy()
			addTo(cr, sidecars)
		}
		maxInto(inits, cr)
	}
	maxInto(reqs, inits)
	addTo(reqs, spec.Overhead)
	return reqs
}

// keepFirst is a with the entries of b it lacks (resource.MergeResourceListKeepFirst).
func keepFirst(a, b corev1.ResourceList) corev1.ResourceList {
	if len(b) == 0 {
		return a
	}
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for r, q := range b {
		if _, ok := out[r]; !ok {
			out[r] = q.DeepCopy()
		}
	}
	return out
}

func addTo(sum, add corev1.ResourceList) {
	for r, q := range add {
		cur := sum[r]
		cur.Add(q)
		sum[r] = cur
	}
}

func maxInto(into, other corev1.ResourceList) {
	for r, q := range other {
		if cur, ok := into[r]; !ok || q.Cmp(cur) > 0 {
			into[r] = q.DeepCopy()
		}
	}
}
