package tenant

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
)

// The ClusterRoles every cluster has, to which tenant members are bound
// besides the tenant's own Roles (see Spec.Objects).
const (
	ClusterRoleEdit = "edit"
	ClusterRoleView = "view"
)

// Defaults of a tenant's LimitRange: the requests a container that states
// none gets, so that the scheduler and the quota count it. There is no
// default limit: a limit the engine did not ask for kills it (a vLLM pod
// given 1Gi is OOM-killed while it loads the weights), so a container
// without limits may use what its node has. DefaultCPU and DefaultMemory
// set limits for tenants that want them.
const (
	DefaultCPURequest    = "100m"
	DefaultMemoryRequest = "128Mi"
)

// PipelineServiceAccount is the ServiceAccount every tenant gives its
// pipelines: pass it to pipeline.(*Pipeline).ServiceAccount. Its Role lets
// Argo's executor report step results and lets a workload step create and
// read the jobs it runs.
const PipelineServiceAccount = "cube-pipeline"

// Spec builds a team's share of a cluster: its namespace, quota,
// container defaults, Volcano queue, members, pipeline account and network
// isolation. Create one with New; it is a cube.Workload. Its methods are
// its settings, each returning the Spec; Objects renders it. Admits and
// LevelFor check workloads against its Pod Security level.
type Spec struct {
	made        bool // by New: a zero Spec is refused
	name        string
	labels      map[string]string
	podSecurity PodSecurityLevel
	levelSet    bool // PodSecurity was called
	rdma        bool // AllowRDMA was called
	editors     []rbacv1.Subject
	viewers     []rbacv1.Subject
	hard        map[corev1.ResourceName]string
	accels      []corev1.ResourceName             // the resources of Accelerators, in order
	unaccel     []string                          // profiles given to Accelerators with no device resource
	defaults    map[corev1.ResourceName][2]string // request, limit ("": none)
	weight      int
	reclaimable *bool
	queueing    QueueSystem
	cohort      string
	borrowing   map[corev1.ResourceName]string
	lending     map[corev1.ResourceName]string
	profiles    []accelQuota // Accelerators' calls, one per profile name, for Kueue's flavors
	allowFrom   []string
	exceptions  []IngressException
}

// New starts the tenant named name, which also names its namespace and
// Volcano queue. Its namespace enforces the baseline Pod Security level;
// its containers default to the requests DefaultCPURequest and
// DefaultMemoryRequest and no limits; ingress from other namespaces is
// denied except for KubeRayIngress and PrometheusIngress.
//
// A tenant whose jobs use RDMA (InfiniBand or RoCE fabrics) must opt in with
// AllowRDMA: the pods need the IPC_LOCK capability, which the baseline level
// refuses, so the namespace runs at the privileged level instead. Admits
// (and Client.Apply, against the namespace's labels) says which workloads
// the level refuses before anything is applied.
func New(name string) *Spec {
	return &Spec{
		made:        true,
		name:        name,
		podSecurity: PodSecurityBaseline,
		hard:        map[corev1.ResourceName]string{},
		defaults: map[corev1.ResourceName][2]string{
			corev1.ResourceCPU:    {DefaultCPURequest, ""},
			corev1.ResourceMemory: {DefaultMemoryRequest, ""},
		},
		weight:     1,
		exceptions: []IngressException{KubeRayIngress(), PrometheusIngress()},
	}
}

// Label adds a label to the namespace.
func (t *Spec) Label(key, value string) *Spec {
	if t == nil {
		return nil
	}
	if t.labels == nil {
		t.labels = map[string]string{}
	}
	t.labels[key] = value
	return t
}

// Editors binds users to the ClusterRole edit and to the tenant's Role
// <name>-cube-edit in the namespace.
func (t *Spec) Editors(users ...string) *Spec {
	if t == nil {
		return nil
	}
	t.editors = appendSubjects(t.editors, rbacv1.UserKind, users)
	return t
}

// EditorGroups binds groups as Editors binds users.
func (t *Spec) EditorGroups(groups ...string) *Spec {
	if t == nil {
		return nil
	}
	t.editors = appendSubjects(t.editors, rbacv1.GroupKind, groups)
	return t
}

// Viewers binds users to the ClusterRole view and to the tenant's Role
// <name>-cube-view in the namespace.
func (t *Spec) Viewers(users ...string) *Spec {
	if t == nil {
		return nil
	}
	t.viewers = appendSubjects(t.viewers, rbacv1.UserKind, users)
	return t
}

// ViewerGroups binds groups as Viewers binds users.
func (t *Spec) ViewerGroups(groups ...string) *Spec {
	if t == nil {
		return nil
	}
	t.viewers = appendSubjects(t.viewers, rbacv1.GroupKind, groups)
	return t
}

func appendSubjects(to []rbacv1.Subject, kind string, names []string) []rbacv1.Subject {
	for _, n := range names {
		to = append(to, rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return to
}

// setHard sets a quota limit on a builder that may be a zero value.
func (t *Spec) setHard(name corev1.ResourceName, q string) {
	if t.hard == nil {
		t.hard = map[corev1.ResourceName]string{}
	}
	t.hard[name] = q
}

// CPU limits the sum of the namespace's CPU requests to q ("64"). Limits
// are not bounded unless Quota sets limits.cpu.
func (t *Spec) CPU(q string) *Spec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsCPU, q)
	return t
}

// Memory limits the sum of the namespace's memory requests to q ("512Gi").
// Limits are not bounded unless Quota sets limits.memory.
func (t *Spec) Memory(q string) *Spec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsMemory, q)
	return t
}

// Pods limits how many pods the namespace holds.
func (t *Spec) Pods(n int) *Spec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourcePods, fmt.Sprint(n))
	return t
}

// Storage limits the storage all the namespace's claims request ("10Ti").
func (t *Spec) Storage(q string) *Spec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsStorage, q)
	return t
}

// Accelerators limits how many whole devices of profile p the namespace's
// pods request, e.g. Accelerators(hardware.H100, 16) or
// Accelerators(hardware.Ascend910B3, 32): the quota gets
// requests.<p.ResourceName> and the Volcano queue's capability
// <p.ResourceName>. Profiles that share a resource name (every NVIDIA card
// is nvidia.com/gpu) share one limit: the last call for it sets it. With
// Queueing(Kueue) each profile is a ResourceFlavor of its own (FlavorName,
// the profile's node labels) with n devices of quota in the ClusterQueue. A card
// the catalogue lacks is a Profile value with its ResourceName; a profile
// without one (hardware.CPU) is reported by Objects.
func (t *Spec) Accelerators(p hardware.Profile, n int) *Spec {
	if t == nil {
		return nil
	}
	if p.ResourceName == "" {
		t.unaccel = append(t.unaccel, p.Name)
		return t
	}
	t.setHard(corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(p.ResourceName)), fmt.Sprint(n))
	if i := slices.IndexFunc(t.profiles, func(a accelQuota) bool { return a.profile.Name == p.Name }); i >= 0 {
		t.profiles[i] = accelQuota{p, n}
	} else {
		t.profiles = append(t.profiles, accelQuota{p, n})
	}
	if !slices.Contains(t.accels, p.ResourceName) {
		t.accels = append(t.accels, p.ResourceName)
	}
	return t
}

// Quota sets any ResourceQuota hard limit (e.g. "persistentvolumeclaims",
// "services.loadbalancers", "limits.memory"), replacing one of the same
// name. A limits.cpu or limits.memory quota needs a default limit
// (DefaultCPU, DefaultMemory): the API server refuses a container without
// a limit in a namespace whose quota bounds limits.
func (t *Spec) Quota(name corev1.ResourceName, q string) *Spec {
	if t == nil {
		return nil
	}
	t.setHard(name, q)
	return t
}

// setDefault sets a LimitRange default on a builder that may be a zero value.
func (t *Spec) setDefault(name corev1.ResourceName, request, limit string) {
	if t.defaults == nil {
		t.defaults = map[corev1.ResourceName][2]string{}
	}
	t.defaults[name] = [2]string{request, limit}
}

// DefaultCPU sets the CPU request and limit a container gets when it
// states none; an empty limit gives none.
func (t *Spec) DefaultCPU(request, limit string) *Spec {
	if t == nil {
		return nil
	}
	t.setDefault(corev1.ResourceCPU, request, limit)
	return t
}

// DefaultMemory sets the memory request and limit a container gets when
// it states none; an empty limit gives none. A memory limit kills the
// container that goes over it: give one only if every image in the tenant
// states its own or fits it.
func (t *Spec) DefaultMemory(request, limit string) *Spec {
	if t == nil {
		return nil
	}
	t.setDefault(corev1.ResourceMemory, request, limit)
	return t
}

// QueueWeight sets the weight of the tenant's Volcano queue: its share of
// the cluster relative to the other queues (default 1). With
// Queueing(Kueue) it is the ClusterQueue's fair-sharing weight in its
// cohort: the share of the cohort's unused quota it may borrow, and which
// borrower gives back first.
func (t *Spec) QueueWeight(n int) *Spec {
	if t == nil {
		return nil
	}
	t.weight = n
	return t
}

// QueueReclaimable says whether other queues may reclaim resources the
// tenant's queue borrowed beyond its share (Volcano's default is true).
func (t *Spec) QueueReclaimable(on bool) *Spec {
	if t == nil {
		return nil
	}
	t.reclaimable = &on
	return t
}

// PodSecurity sets the Pod Security level the namespace enforces (default
// PodSecurityBaseline). With AllowRDMA only PodSecurityPrivileged is
// possible: Objects reports any other level.
func (t *Spec) PodSecurity(level PodSecurityLevel) *Spec {
	if t == nil {
		return nil
	}
	t.podSecurity, t.levelSet = level, true
	return t
}

// AllowRDMA lets the tenant's pods use RDMA fabrics: they need the
// IPC_LOCK capability to pin memory, which the baseline and restricted
// levels refuse, so the namespace enforces the privileged level. It is an
// explicit opt-in because that level also admits privileged containers and
// host paths; together with PodSecurity of another level it is an error,
// whichever comes first.
func (t *Spec) AllowRDMA() *Spec {
	if t == nil {
		return nil
	}
	t.rdma = true
	return t
}

// level is the level the namespace enforces.
func (t *Spec) level() PodSecurityLevel {
	if t.rdma && !t.levelSet {
		return PodSecurityPrivileged
	}
	return t.podSecurity
}

// AllowIngressFromNamespace admits traffic from every pod of another
// namespace (a monitoring or ingress namespace) to every pod of the
// tenant, which the tenant's NetworkPolicy otherwise denies. AllowIngress
// admits narrower traffic.
func (t *Spec) AllowIngressFromNamespace(namespace string) *Spec {
	if t == nil {
		return nil
	}
	t.allowFrom = append(t.allowFrom, namespace)
	return t
}

// AllowIngress adds an exception to the tenant's network isolation: a
// NetworkPolicy <name>-allow-<e.Name>.
func (t *Spec) AllowIngress(e IngressException) *Spec {
	if t == nil {
		return nil
	}
	t.exceptions = append(t.exceptions, e.clone())
	return t
}

// IngressExceptions replaces the tenant's exceptions to its network
// isolation (KubeRayIngress and PrometheusIngress unless replaced); with
// no arguments only the namespace's own pods, and the namespaces of
// AllowIngressFromNamespace, reach the tenant's pods.
func (t *Spec) IngressExceptions(es ...IngressException) *Spec {
	if t == nil {
		return nil
	}
	t.exceptions = nil
	for _, e := range es {
		t.exceptions = append(t.exceptions, e.clone())
	}
	return t
}

// identity is the identity that labels the tenant's objects.
func (t *Spec) identity() cube.Identity { return cube.Identity{Kind: "tenant", Release: t.name} }

// errNotMade is the error of a nil or zero Spec.
var errNotMade = errors.New("tenant: Spec is nil or zero: start it with tenant.New(name)")

// Objects validates the tenant and returns, in a fresh slice of fresh
// objects: the Namespace, a ResourceQuota and a LimitRange named after the
// tenant, its Volcano Queue (with Queueing(Kueue) instead: the
// ResourceFlavors DefaultFlavor and one per accelerator profile, the
// ClusterQueue and the LocalQueue named after the tenant; with
// Queueing(NoQueue) none), the pipeline ServiceAccount, Role and
// RoleBinding (PipelineServiceAccount), the Roles <name>-cube-edit and
// <name>-cube-view, RoleBindings <name>-edit, <name>-cube-edit, <name>-view
// and <name>-cube-view (when they have members), the NetworkPolicy
// <name>-isolation and one NetworkPolicy <name>-allow-<exception> per
// ingress exception. Every problem is reported at once.
func (t *Spec) Objects() ([]client.Object, error) {
	if t == nil || !t.made {
		return nil, errNotMade
	}
	var errs field.ErrorList
	id := t.identity()
	namePath := field.NewPath("metadata", "name")
	for _, msg := range validation.IsDNS1123Label(t.name) {
		errs = append(errs, field.Invalid(namePath, t.name, msg))
	}
	levelPath := field.NewPath("metadata", "labels").Key(LabelPodSecurityEnforce)
	switch {
	case !slices.Contains(podSecurityLevels, t.podSecurity):
		errs = append(errs, field.NotSupported(levelPath, t.podSecurity, podSecurityLevels))
	case t.rdma && t.level() != PodSecurityPrivileged:
		errs = append(errs, field.Invalid(levelPath, t.podSecurity, "AllowRDMA needs the privileged level: the "+string(t.podSecurity)+" level refuses the IPC_LOCK capability RDMA pods add"))
	}
	for _, k := range slices.Sorted(maps.Keys(t.labels)) {
		p := field.NewPath("metadata", "labels").Key(k)
		for _, msg := range validation.IsQualifiedName(k) {
			errs = append(errs, field.Invalid(p, k, msg))
		}
		for _, msg := range validation.IsValidLabelValue(t.labels[k]) {
			errs = append(errs, field.Invalid(p, t.labels[k], msg))
		}
	}
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: id.ObjectMeta(t.name, "", t.namespaceLabels(), nil),
	}

	for _, name := range t.unaccel {
		errs = append(errs, field.Invalid(field.NewPath("spec", "hard"), name, "Accelerators: the hardware profile names no device resource (ResourceName)"))
	}
	hard, hardErrs := quantity.ParseResourceList(t.hard, field.NewPath("spec", "hard"))
	errs = append(errs, hardErrs...)
	errs = append(errs, t.checkQueueing()...)
	quotaHard := corev1.ResourceList{}
	for name, q := range hard {
		if !t.kueueManaged(name) {
			quotaHard[name] = q
		}
	}
	if len(quotaHard) == 0 && len(hard) > 0 {
		quotaHard = nil
	}
	for _, name := range slices.Sorted(maps.Keys(t.hard)) {
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "hard").Key(string(name)), string(name), msg))
		}
	}
	quota := &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: id.ObjectMeta(t.name, t.name, nil, nil),
		Spec:       corev1.ResourceQuotaSpec{Hard: quotaHard},
	}

	limitRange, lrErrs := t.limitRange(id, hard)
	errs = append(errs, lrErrs...)
	objs := []client.Object{ns, quota, limitRange}
	switch t.queueSystem() {
	case Volcano:
		queue, qErrs := t.queue(id, hard)
		errs = append(errs, qErrs...)
		objs = append(objs, queue)
	case Kueue:
		queues, qErrs := t.kueueObjects(id, hard)
		errs = append(errs, qErrs...)
		objs = append(objs, queues...)
	}
	objs = append(objs, t.pipelineAccount(id)...)
	objs = append(objs, t.memberRoles(id)...)
	bindings, bErrs := t.memberBindings(id)
	errs = append(errs, bErrs...)
	objs = append(objs, bindings...)
	policies, npErrs := t.networkPolicies(id)
	errs = append(errs, npErrs...)
	objs = append(objs, policies...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}

func (t *Spec) limitRange(id cube.Identity, hard corev1.ResourceList) (*corev1.LimitRange, field.ErrorList) {
	var errs field.ErrorList
	item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
	p := field.NewPath("spec", "limits").Index(0)
	for _, name := range slices.Sorted(maps.Keys(t.defaults)) {
		d := t.defaults[name]
		reqPath, limPath := p.Child("defaultRequest").Key(string(name)), p.Child("default").Key(string(name))
		req, reqErr := quantity.ParseField(reqPath, d[0], quantity.NonNegative)
		if reqErr != nil {
			errs = append(errs, reqErr)
		} else {
			if item.DefaultRequest == nil {
				item.DefaultRequest = corev1.ResourceList{}
			}
			item.DefaultRequest[name] = req
			if q, ok := hard[corev1.ResourceName("requests."+string(name))]; ok && req.Cmp(q) > 0 {
				errs = append(errs, field.Invalid(reqPath, d[0], "exceeds the quota requests."+string(name)+"="+q.String()+": no container without its own request would fit"))
			}
		}
		if d[1] == "" {
			continue
		}
		lim, limErr := quantity.ParseField(limPath, d[1], quantity.NonNegative)
		if limErr != nil {
			errs = append(errs, limErr)
			continue
		}
		if item.Default == nil {
			item.Default = corev1.ResourceList{}
		}
		item.Default[name] = lim
		if reqErr == nil && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(reqPath, d[0], "must not exceed the default limit "+d[1]))
		}
		// A default limit above the namespace's whole quota fits no pod.
		for _, bound := range []string{"limits.", "requests."} {
			if q, ok := hard[corev1.ResourceName(bound+string(name))]; ok && lim.Cmp(q) > 0 {
				errs = append(errs, field.Invalid(limPath, d[1], "exceeds the quota "+bound+string(name)+"="+q.String()+": no container without its own limit would fit"))
				break
			}
		}
	}
	// The API server refuses a container without a limit where the quota
	// bounds limits (quota admission, "must specify limits.memory").
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, bounded := hard[corev1.ResourceName("limits."+string(name))]; bounded && t.defaults[name][1] == "" {
			errs = append(errs, field.Required(p.Child("default").Key(string(name)),
				"the quota bounds limits."+string(name)+", so containers need a default limit (DefaultCPU/DefaultMemory) or the API server refuses those without one"))
		}
	}
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: id.ObjectMeta(t.name, t.name, nil, nil),
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
	}, errs
}
