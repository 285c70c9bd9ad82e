package tenant

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	kueue "github.com/cubestudio/cube/internal/kueue/v1beta2"
	"github.com/cubestudio/cube/internal/quantity"
)

// QueueSystem is what queues a tenant's jobs for its quota (Queueing).
type QueueSystem string

// The queue systems of a tenant.
const (
	// Volcano gives the tenant a Volcano Queue whose capability follows
	// its quota; jobs enter it with Queue(name) and Gang() and are
	// scheduled by Volcano's scheduler. The default.
	Volcano QueueSystem = "Volcano"
	// Kueue gives the tenant a ClusterQueue holding its quota per
	// ResourceFlavor, in a cohort when Cohort is set, and a LocalQueue in
	// its namespace; jobs enter it with LocalQueue(name), wait suspended
	// until the whole job fits and then run with the cluster's own
	// scheduler.
	Kueue QueueSystem = "Kueue"
	// NoQueue gives the tenant no queue: the ResourceQuota refuses each
	// pod beyond the quota as it is created.
	NoQueue QueueSystem = "None"
)

var queueSystems = []QueueSystem{Volcano, Kueue, NoQueue}

// LabelQueueing is the label a tenant's Namespace carries with its queue
// system (Kueue, Volcano or None). A platform running Kueue sets Kueue's
// managedJobsNamespaceSelector to cube.dev/queueing=Kueue
// (sigs.k8s.io/kueue v0.17.0 apis/config/v1beta2/configuration_types.go):
// Kueue's pod-based integrations then manage pods, Deployments and
// StatefulSets only in Kueue tenants' namespaces, and its pod webhook
// leaves every other namespace's pods alone. Without it that webhook
// looks up each pod's owning job in Kueue's cache
// (jobframework.FindAncestorJobManagedByKueue), and a job created a
// moment before is refused as not found.
const LabelQueueing = "cube.dev/queueing"

// DefaultFlavor is the ResourceFlavor of a Kueue tenant's CPU and memory:
// any node. Accelerators get one flavor per hardware profile (FlavorName).
const DefaultFlavor = "cube-default"

// FlavorName is the ResourceFlavor of profile p: "cube-" and the
// profile's name in lower case, e.g. cube-h100-sxm-80gb.
func FlavorName(p hardware.Profile) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, p.Name)
	return "cube-" + strings.Trim(name, "-")
}

// accelQuota is a tenant's quota of one accelerator profile.
type accelQuota struct {
	profile hardware.Profile
	n       int
}

// Queueing chooses what queues the tenant's jobs (default Volcano). With
// Kueue, the CPU, memory and accelerator quotas are the ClusterQueue's
// nominal quota instead of the ResourceQuota's, so that the tenant can
// borrow beyond them from its cohort: Kueue admits a job only when all of
// its pods fit, and every job of the tenant must then carry its
// LocalQueue (LocalQueue(name) on the builder), or Kueue does not see it
// and the namespace's CPU, memory and accelerators are unbounded for it.
func (t *Spec) Queueing(s QueueSystem) *Spec {
	if t == nil {
		return nil
	}
	t.queueing = s
	return t
}

// Cohort puts a Kueue tenant's ClusterQueue in a cohort: ClusterQueues of
// one cohort lend each other their unused quota, within BorrowingLimit
// and LendingLimit, and take it back by preemption when their own jobs
// need it.
func (t *Spec) Cohort(name string) *Spec {
	if t == nil {
		return nil
	}
	t.cohort = name
	return t
}

// BorrowingLimit bounds how much of resource name ("cpu", "memory",
// "nvidia.com/gpu") a Kueue tenant may borrow from its cohort beyond its
// quota, on every flavor of the resource (default: all the cohort has
// unused).
func (t *Spec) BorrowingLimit(name corev1.ResourceName, q string) *Spec {
	if t == nil {
		return nil
	}
	if t.borrowing == nil {
		t.borrowing = map[corev1.ResourceName]string{}
	}
	t.borrowing[name] = q
	return t
}

// LendingLimit bounds how much of its quota of resource name a Kueue
// tenant lends to its cohort when it does not use it, on every flavor of
// the resource (default: all of it).
func (t *Spec) LendingLimit(name corev1.ResourceName, q string) *Spec {
	if t == nil {
		return nil
	}
	if t.lending == nil {
		t.lending = map[corev1.ResourceName]string{}
	}
	t.lending[name] = q
	return t
}

// queueSystem is the chosen system, Volcano unless set.
func (t *Spec) queueSystem() QueueSystem {
	if t.queueing == "" {
		return Volcano
	}
	return t.queueing
}

// checkQueueing reports settings that do not fit the chosen system.
func (t *Spec) checkQueueing() field.ErrorList {
	var errs field.ErrorList
	s := t.queueSystem()
	if !slices.Contains(queueSystems, s) {
		return field.ErrorList{field.NotSupported(field.NewPath("queueing"), s, queueSystems)}
	}
	if s != Kueue {
		if t.cohort != "" {
			errs = append(errs, field.Invalid(field.NewPath("clusterQueue", "spec", "cohortName"), t.cohort, "a cohort is Kueue's: set Queueing(tenant.Kueue)"))
		}
		for _, r := range slices.Sorted(maps.Keys(t.borrowing)) {
			errs = append(errs, field.Invalid(field.NewPath("clusterQueue", "spec", "borrowingLimit").Key(string(r)), t.borrowing[r], "a borrowing limit is Kueue's: set Queueing(tenant.Kueue)"))
		}
		for _, r := range slices.Sorted(maps.Keys(t.lending)) {
			errs = append(errs, field.Invalid(field.NewPath("clusterQueue", "spec", "lendingLimit").Key(string(r)), t.lending[r], "a lending limit is Kueue's: set Queueing(tenant.Kueue)"))
		}
	}
	if s != Volcano && t.reclaimable != nil {
		errs = append(errs, field.Invalid(field.NewPath("queue", "spec", "reclaimable"), *t.reclaimable, "QueueReclaimable is Volcano's; a Kueue cohort reclaims lent quota by preemption (LendingLimit bounds what is lent)"))
	}
	return errs
}

// kueueManaged are the quota entries a Kueue tenant's ClusterQueue holds
// instead of its ResourceQuota: a ResourceQuota on them would refuse the
// pods of a job Kueue admitted on borrowed quota, part of the job started.
func (t *Spec) kueueManaged(name corev1.ResourceName) bool {
	if t.queueSystem() != Kueue {
		return false
	}
	switch name {
	case corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory:
		return true
	}
	for _, r := range t.accels {
		if name == corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r)) {
			return true
		}
	}
	return false
}

// kueueObjects are a Kueue tenant's ClusterQueue and LocalQueue, both
// named after the tenant. The ResourceFlavors they name are cluster-wide
// and shared by every tenant, so a tenant does not create them: the
// platform applies Flavors once.
func (t *Spec) kueueObjects(id cube.Identity, hard corev1.ResourceList) ([]client.Object, field.ErrorList) {
	var errs field.ErrorList
	cqPath := field.NewPath("clusterQueue", "spec")
	if t.cohort != "" {
		for _, msg := range validation.IsDNS1123Subdomain(t.cohort) {
			errs = append(errs, field.Invalid(cqPath.Child("cohortName"), t.cohort, msg))
		}
	}
	if t.weight < 1 || t.weight > 1<<20 {
		errs = append(errs, field.Invalid(cqPath.Child("fairSharing", "weight"), t.weight, fmt.Sprintf("must be from 1 to %d", 1<<20)))
	}
	// Kueue admits only what a ClusterQueue covers, and every pod asks for
	// CPU and memory (the LimitRange gives a default request).
	for _, r := range []corev1.ResourceName{corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory} {
		if _, ok := hard[r]; !ok {
			errs = append(errs, field.Required(field.NewPath("spec", "hard").Key(string(r)), "a Kueue tenant needs a CPU and a memory quota (CPU, Memory): Kueue admits no pod whose requests its ClusterQueue does not cover"))
		}
	}
	limits := func(m map[corev1.ResourceName]string, name string) map[corev1.ResourceName]resource.Quantity {
		out := map[corev1.ResourceName]resource.Quantity{}
		for _, r := range slices.Sorted(maps.Keys(m)) {
			p := cqPath.Child(name).Key(string(r))
			if t.cohort == "" {
				errs = append(errs, field.Invalid(p, m[r], "needs a cohort (Cohort): there is no one to "+strings.TrimSuffix(name, "Limit")+" from or to"))
				continue
			}
			q, err := quantity.ParseField(p, m[r], quantity.NonNegative)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			out[r] = q
		}
		return out
	}
	borrowing, lending := limits(t.borrowing, "borrowingLimit"), limits(t.lending, "lendingLimit")
	quota := func(r corev1.ResourceName, q resource.Quantity) kueue.ResourceQuota {
		rq := kueue.ResourceQuota{Name: r, NominalQuota: q}
		if b, ok := borrowing[r]; ok {
			rq.BorrowingLimit = &b
		}
		if l, ok := lending[r]; ok {
			if l.Cmp(q) > 0 {
				errs = append(errs, field.Invalid(cqPath.Child("lendingLimit").Key(string(r)), l.String(), "exceeds the quota "+q.String()))
			}
			rq.LendingLimit = &l
		}
		return rq
	}
	for _, m := range []map[corev1.ResourceName]resource.Quantity{borrowing, lending} {
		for _, r := range slices.Sorted(maps.Keys(m)) {
			if r != corev1.ResourceCPU && r != corev1.ResourceMemory && !slices.Contains(t.accels, r) {
				errs = append(errs, field.Invalid(cqPath.Child("resourceGroups"), string(r), "the tenant has no quota of this resource (CPU, Memory, Accelerators)"))
			}
		}
	}

	meta := func(name, namespace string) metav1.ObjectMeta { return id.ObjectMeta(name, namespace, nil, nil) }
	gv := kueue.GroupVersion.String()
	var cpu, mem resource.Quantity
	if q, ok := hard[corev1.ResourceRequestsCPU]; ok {
		cpu = q.DeepCopy()
	}
	if q, ok := hard[corev1.ResourceRequestsMemory]; ok {
		mem = q.DeepCopy()
	}
	groups := []kueue.ResourceGroup{{
		CoveredResources: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory},
		Flavors: []kueue.FlavorQuotas{{Name: DefaultFlavor, Resources: []kueue.ResourceQuota{
			quota(corev1.ResourceCPU, cpu), quota(corev1.ResourceMemory, mem),
		}}},
	}}
	// One group per device resource, one flavor per profile of it, in the
	// order of the Accelerators calls: Kueue tries a group's flavors in
	// order and admits on the first that fits.
	for _, r := range t.accels {
		g := kueue.ResourceGroup{CoveredResources: []corev1.ResourceName{r}}
		for _, a := range t.profiles {
			if a.profile.ResourceName != r {
				continue
			}
			name := FlavorName(a.profile)
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(field.NewPath("resourceFlavor", "metadata", "name"), name, msg))
			}
			if a.n < 0 {
				errs = append(errs, field.Invalid(cqPath.Child("resourceGroups").Key(string(r)), a.n, "must not be negative"))
			}
			g.Flavors = append(g.Flavors, kueue.FlavorQuotas{Name: kueue.ResourceFlavorReference(name), Resources: []kueue.ResourceQuota{
				quota(r, *resource.NewQuantity(int64(max(a.n, 0)), resource.DecimalSI)),
			}})
		}
		groups = append(groups, g)
	}
	weight := resource.NewQuantity(int64(min(max(t.weight, 0), 1<<20)), resource.DecimalSI)
	cq := &kueue.ClusterQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "ClusterQueue"},
		ObjectMeta: meta(t.name, ""),
		Spec: kueue.ClusterQueueSpec{
			ResourceGroups: groups,
			CohortName:     kueue.CohortReference(t.cohort),
			// Only the tenant's namespace submits to it.
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: t.name}},
			// A job waiting for quota the tenant lent takes it back from
			// the borrowers, whatever their priority; within the tenant a
			// job preempts only jobs of lower priority (the pods'
			// PriorityClass, or a WorkloadPriorityClass).
			Preemption: &kueue.ClusterQueuePreemption{
				ReclaimWithinCohort: kueue.PreemptionPolicyAny,
				WithinClusterQueue:  kueue.PreemptionPolicyLowerPriority,
			},
			FairSharing: &kueue.FairSharing{Weight: weight},
		},
	}
	lq := &kueue.LocalQueue{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "LocalQueue"},
		ObjectMeta: meta(t.name, t.name),
		Spec:       kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(t.name)},
	}
	return []client.Object{cq, lq}, errs
}

// Flavors is the platform's workload of Kueue ResourceFlavors: DefaultFlavor
// for CPU and memory and one flavor per profile (FlavorName), with the
// profile's node labels and tolerations, so that Kueue places an admitted
// job's pods on the nodes of the profile its quota came from. Flavors are
// cluster-wide and every Kueue tenant's ClusterQueue names them, so they
// belong to one release of their own, which the platform applies once
// (in the namespace its cluster-wide releases are recorded in) before the
// tenants, and never with a tenant: deleting a tenant must not delete what
// the others use. release names that release.
func Flavors(release string, profiles ...hardware.Profile) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		var errs field.ErrorList
		for _, msg := range validation.IsDNS1123Label(release) {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), release, msg))
		}
		id := cube.Identity{Kind: "kueue-flavors", Release: release}
		gv := kueue.GroupVersion.String()
		objs := []client.Object{&kueue.ResourceFlavor{
			TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "ResourceFlavor"},
			ObjectMeta: id.ObjectMeta(DefaultFlavor, "", nil, nil),
		}}
		seen := map[string]bool{DefaultFlavor: true}
		for i, p := range profiles {
			name := FlavorName(p)
			for _, msg := range validation.IsDNS1123Subdomain(name) {
				errs = append(errs, field.Invalid(field.NewPath("profiles").Index(i), name, msg))
			}
			if seen[name] {
				continue
			}
			seen[name] = true
			objs = append(objs, &kueue.ResourceFlavor{
				TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "ResourceFlavor"},
				ObjectMeta: id.ObjectMeta(name, "", nil, nil),
				Spec:       kueue.ResourceFlavorSpec{NodeLabels: p.NodeLabels(), Tolerations: p.Tolerations()},
			})
		}
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return objs, nil
	})
}

// Priority is one of the platform's Kueue WorkloadPriorityClasses: the
// name a workload gives itself with WorkloadPriority (pod.Builder), and
// its value, higher first.
type Priority struct {
	Name        string
	Value       int32
	Description string
}

// Priorities is the platform's workload of Kueue WorkloadPriorityClasses
// (kueue.x-k8s.io/v1beta2, sigs.k8s.io/kueue v0.17.0
// apis/kueue/v1beta2/workloadpriorityclass_types.go): the priorities
// Kueue admits a queue's workloads by and, within a tenant's
// ClusterQueue (whose policy is LowerPriority), preempts admitted
// workloads of lower priority for. They are Kueue's alone:
// kube-scheduler does not preempt pods for them, as it does for a
// PriorityClass. Like Flavors they are cluster-wide and shared by every
// tenant, so they belong to one release of their own that the platform
// applies once, never with a tenant. release names that release; every
// name is an object name and a label value, and named once.
func Priorities(release string, ps ...Priority) cube.Workload {
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		errs := priorityNames(release, ps, func(name string) []string {
			return append(validation.IsDNS1123Subdomain(name), validation.IsValidLabelValue(name)...)
		})
		id := cube.Identity{Kind: "kueue-priorities", Release: release}
		gv := kueue.GroupVersion.String()
		var objs []client.Object
		for _, p := range ps {
			objs = append(objs, &kueue.WorkloadPriorityClass{
				TypeMeta:    metav1.TypeMeta{APIVersion: gv, Kind: "WorkloadPriorityClass"},
				ObjectMeta:  id.ObjectMeta(p.Name, "", nil, nil),
				Value:       p.Value,
				Description: p.Description,
			})
		}
		if len(errs) > 0 {
			return nil, errs.ToAggregate()
		}
		return objs, nil
	})
}

// kueueActive reads a ClusterQueue or LocalQueue as Kueue reports it: its
// Active condition (apis/kueue/v1beta2 clusterqueue_types.go
// ClusterQueueActive; the LocalQueue's is the same type). True is Ready;
// False is in progress with Kueue's reason (FlavorNotFound until the
// flavors exist, Stopped, ClusterQueueDoesNotExist for a LocalQueue);
// no condition yet is in progress: Kueue has not seen it.
func kueueActive(kind string) cube.Kind {
	return cube.Kind{
		GroupKind: kueue.GroupVersion.WithKind(kind).GroupKind(),
		Status: func(u *unstructured.Unstructured) cube.ObjectStatus {
			conds, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
			if err != nil {
				return cube.ObjectStatus{Phase: cube.Failed, Reason: "Unreadable", Message: err.Error()}
			}
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] != kueue.ClusterQueueActive {
					continue
				}
				reason, _ := m["reason"].(string)
				message, _ := m["message"].(string)
				switch m["status"] {
				case string(metav1.ConditionTrue):
					return cube.ObjectStatus{Phase: cube.Ready, Reason: reason}
				case string(metav1.ConditionFalse):
					return cube.ObjectStatus{Phase: cube.InProgress, Reason: reason, Message: message}
				}
				return cube.ObjectStatus{Phase: cube.Unknown, Reason: reason, Message: message}
			}
			return cube.ObjectStatus{Phase: cube.InProgress, Reason: "NotActive", Message: "Kueue has not activated it yet"}
		},
	}
}

// kueueFlavorKind reads a ResourceFlavor Ready once it exists: it has no
// status.
var kueueFlavorKind = cube.ExistsKind(kueue.GroupVersion.WithKind("ResourceFlavor").GroupKind())

// kueuePriorityKind reads a WorkloadPriorityClass Ready once it exists:
// it has no status either.
var kueuePriorityKind = cube.ExistsKind(kueue.GroupVersion.WithKind("WorkloadPriorityClass").GroupKind())
