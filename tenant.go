package cube

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube/internal/quantity"
)

// PodSecurityLevel is a Pod Security Standards level, enforced on a
// tenant's namespace by the API server's PodSecurity admission.
type PodSecurityLevel string

// Pod Security Standards levels.
const (
	PodSecurityPrivileged PodSecurityLevel = "privileged"
	PodSecurityBaseline   PodSecurityLevel = "baseline"
	PodSecurityRestricted PodSecurityLevel = "restricted"
)

// Pod Security admission labels of a namespace.
const (
	LabelPodSecurityEnforce        = "pod-security.kubernetes.io/enforce"
	LabelPodSecurityEnforceVersion = "pod-security.kubernetes.io/enforce-version"
	LabelPodSecurityWarn           = "pod-security.kubernetes.io/warn"
	LabelPodSecurityAudit          = "pod-security.kubernetes.io/audit"
)

// The ClusterRoles every cluster has, to which tenant members are bound
// besides the tenant's own Roles (see Objects).
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

// TenantSpec builds a team's share of a cluster: its namespace, quota,
// container defaults, Volcano queue, members, pipeline account and network
// isolation. Create one with Tenant; it is a Workload.
type TenantSpec struct {
	made        bool // by Tenant: a zero TenantSpec is refused
	name        string
	labels      map[string]string
	podSecurity PodSecurityLevel
	levelSet    bool // PodSecurity was called
	rdma        bool // AllowRDMA was called
	editors     []rbacv1.Subject
	viewers     []rbacv1.Subject
	hard        map[corev1.ResourceName]string
	accels      []corev1.ResourceName
	defaults    map[corev1.ResourceName][2]string // request, limit ("": none)
	weight      int
	reclaimable *bool
	allowFrom   []string
	exceptions  []IngressException
}

// Tenant starts the tenant named name, which also names its namespace and
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
func Tenant(name string) *TenantSpec {
	return &TenantSpec{
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

// Name returns the tenant's name (and namespace).
func (t *TenantSpec) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Label adds a label to the namespace.
func (t *TenantSpec) Label(key, value string) *TenantSpec {
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
func (t *TenantSpec) Editors(users ...string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.editors = appendSubjects(t.editors, rbacv1.UserKind, users)
	return t
}

// EditorGroups binds groups as Editors binds users.
func (t *TenantSpec) EditorGroups(groups ...string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.editors = appendSubjects(t.editors, rbacv1.GroupKind, groups)
	return t
}

// Viewers binds users to the ClusterRole view and to the tenant's Role
// <name>-cube-view in the namespace.
func (t *TenantSpec) Viewers(users ...string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.viewers = appendSubjects(t.viewers, rbacv1.UserKind, users)
	return t
}

// ViewerGroups binds groups as Viewers binds users.
func (t *TenantSpec) ViewerGroups(groups ...string) *TenantSpec {
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
func (t *TenantSpec) setHard(name corev1.ResourceName, q string) {
	if t.hard == nil {
		t.hard = map[corev1.ResourceName]string{}
	}
	t.hard[name] = q
}

// CPU limits the sum of the namespace's CPU requests to q ("64"). Limits
// are not bounded unless Quota sets limits.cpu.
func (t *TenantSpec) CPU(q string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsCPU, q)
	return t
}

// Memory limits the sum of the namespace's memory requests to q ("512Gi").
// Limits are not bounded unless Quota sets limits.memory.
func (t *TenantSpec) Memory(q string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsMemory, q)
	return t
}

// Pods limits how many pods the namespace holds.
func (t *TenantSpec) Pods(n int) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourcePods, fmt.Sprint(n))
	return t
}

// Storage limits the storage all the namespace's claims request ("10Ti").
func (t *TenantSpec) Storage(q string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceRequestsStorage, q)
	return t
}

// GPUs limits the devices of one extended resource the namespace
// requests, e.g. GPUs("nvidia.com/gpu", 16) or
// GPUs("huawei.com/Ascend910", 32): the quota gets
// requests.<resource> and the Volcano queue's capability <resource>. Call
// it once per resource name in use (a cluster with several device plugins
// has several).
func (t *TenantSpec) GPUs(resourceName corev1.ResourceName, n int) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(resourceName)), fmt.Sprint(n))
	if !slices.Contains(t.accels, resourceName) {
		t.accels = append(t.accels, resourceName)
	}
	return t
}

// Quota sets any ResourceQuota hard limit (e.g. "persistentvolumeclaims",
// "services.loadbalancers", "limits.memory"), replacing one of the same
// name. A limits.cpu or limits.memory quota needs a default limit
// (DefaultCPU, DefaultMemory): the API server refuses a container without
// a limit in a namespace whose quota bounds limits.
func (t *TenantSpec) Quota(name corev1.ResourceName, q string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setHard(name, q)
	return t
}

// setDefault sets a LimitRange default on a builder that may be a zero value.
func (t *TenantSpec) setDefault(name corev1.ResourceName, request, limit string) {
	if t.defaults == nil {
		t.defaults = map[corev1.ResourceName][2]string{}
	}
	t.defaults[name] = [2]string{request, limit}
}

// DefaultCPU sets the CPU request and limit a container gets when it
// states none; an empty limit gives none.
func (t *TenantSpec) DefaultCPU(request, limit string) *TenantSpec {
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
func (t *TenantSpec) DefaultMemory(request, limit string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.setDefault(corev1.ResourceMemory, request, limit)
	return t
}

// QueueWeight sets the weight of the tenant's Volcano queue: its share of
// the cluster relative to the other queues (default 1).
func (t *TenantSpec) QueueWeight(n int) *TenantSpec {
	if t == nil {
		return nil
	}
	t.weight = n
	return t
}

// QueueReclaimable says whether other queues may reclaim resources the
// tenant's queue borrowed beyond its share (Volcano's default is true).
func (t *TenantSpec) QueueReclaimable(on bool) *TenantSpec {
	if t == nil {
		return nil
	}
	t.reclaimable = &on
	return t
}

// PodSecurity sets the Pod Security level the namespace enforces (default
// PodSecurityBaseline). With AllowRDMA only PodSecurityPrivileged is
// possible: Objects reports any other level.
func (t *TenantSpec) PodSecurity(level PodSecurityLevel) *TenantSpec {
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
func (t *TenantSpec) AllowRDMA() *TenantSpec {
	if t == nil {
		return nil
	}
	t.rdma = true
	return t
}

// level is the level the namespace enforces.
func (t *TenantSpec) level() PodSecurityLevel {
	if t.rdma && !t.levelSet {
		return PodSecurityPrivileged
	}
	return t.podSecurity
}

// AllowIngressFromNamespace admits traffic from every pod of another
// namespace (a monitoring or ingress namespace) to every pod of the
// tenant, which the tenant's NetworkPolicy otherwise denies. AllowIngress
// admits narrower traffic.
func (t *TenantSpec) AllowIngressFromNamespace(namespace string) *TenantSpec {
	if t == nil {
		return nil
	}
	t.allowFrom = append(t.allowFrom, namespace)
	return t
}

// AllowIngress adds an exception to the tenant's network isolation: a
// NetworkPolicy <name>-allow-<e.Name>.
func (t *TenantSpec) AllowIngress(e IngressException) *TenantSpec {
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
func (t *TenantSpec) IngressExceptions(es ...IngressException) *TenantSpec {
	if t == nil {
		return nil
	}
	t.exceptions = nil
	for _, e := range es {
		t.exceptions = append(t.exceptions, e.clone())
	}
	return t
}

// Identity returns the identity that labels the tenant's objects.
func (t *TenantSpec) Identity() Identity { return Identity{Kind: "tenant", Release: t.Name()} }

var podSecurityLevels = []PodSecurityLevel{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// errNotMade is the error of a nil or zero TenantSpec.
var errNotMade = errors.New("cube: TenantSpec is nil or zero: start it with cube.Tenant(name)")

// Objects validates the tenant and returns, in a fresh slice of fresh
// objects: the Namespace, a ResourceQuota and a LimitRange named after the
// tenant, its Volcano Queue, the pipeline ServiceAccount, Role and
// RoleBinding (PipelineServiceAccount), the Roles <name>-cube-edit and
// <name>-cube-view, RoleBindings <name>-edit, <name>-cube-edit, <name>-view
// and <name>-cube-view (when they have members), the NetworkPolicy
// <name>-isolation and one NetworkPolicy <name>-allow-<exception> per
// ingress exception. Every problem is reported at once.
func (t *TenantSpec) Objects() ([]client.Object, error) {
	if t == nil || !t.made {
		return nil, errNotMade
	}
	var errs field.ErrorList
	id := t.Identity()
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

	hard, hardErrs := quantity.ParseResourceList(t.hard, field.NewPath("spec", "hard"))
	errs = append(errs, hardErrs...)
	for _, name := range slices.Sorted(maps.Keys(t.hard)) {
		for _, msg := range validation.IsQualifiedName(string(name)) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "hard").Key(string(name)), string(name), msg))
		}
	}
	quota := &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: id.ObjectMeta(t.name, t.name, nil, nil),
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}

	limitRange, lrErrs := t.limitRange(id, hard)
	errs = append(errs, lrErrs...)
	queue, qErrs := t.queue(id, hard)
	errs = append(errs, qErrs...)

	objs := []client.Object{ns, quota, limitRange, queue}
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

// namespaceLabels are the namespace's labels: the caller's and the Pod
// Security level.
func (t *TenantSpec) namespaceLabels() map[string]string {
	out := maps.Clone(t.labels)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityWarn, LabelPodSecurityAudit} {
		out[k] = string(t.level())
	}
	out[LabelPodSecurityEnforceVersion] = "latest"
	return out
}

// Admits reports, without a cluster, whether the tenant's Pod Security
// level admits the pods of the workloads: nil, or a *PodSecurityError
// naming every pod template the level refuses and why, as the API server's
// PodSecurity admission would (the checks are k8s.io/pod-security-admission's
// at the namespace's enforce level and version). Client.Apply makes the same
// check against the labels of the namespace it applies to.
func (t *TenantSpec) Admits(ws ...Workload) error {
	if t == nil || !t.made {
		return errNotMade
	}
	objs, err := prepareAll("workload", ws)
	if err != nil {
		return err
	}
	return checkPodSecurity(t.name, t.namespaceLabels(), objs)
}

// LevelFor returns the strictest Pod Security level that admits every pod
// of the workloads: PodSecurityRestricted, else PodSecurityBaseline. When
// baseline refuses some pod it returns the *PodSecurityError of the
// baseline level, naming each refused template and why (an RDMA fabric's
// IPC_LOCK, the host paths of a driver): LevelFor never chooses the
// privileged level, which admits privileged containers and host paths, so
// a tenant gets it only by asking (AllowRDMA, PodSecurity). Pass the level
// to PodSecurity:
//
//	level, err := tenant.LevelFor(notebook, job)
//	if err != nil { ... }
//	tenant.PodSecurity(level)
func (t *TenantSpec) LevelFor(ws ...Workload) (PodSecurityLevel, error) {
	if t == nil || !t.made {
		return "", errNotMade
	}
	objs, err := prepareAll("workload", ws)
	if err != nil {
		return "", err
	}
	var refused error
	for _, level := range []PodSecurityLevel{PodSecurityRestricted, PodSecurityBaseline} {
		labels := map[string]string{LabelPodSecurityEnforce: string(level), LabelPodSecurityEnforceVersion: "latest"}
		if refused = checkPodSecurity(t.name, labels, objs); refused == nil {
			return level, nil
		}
	}
	return "", refused
}

func (t *TenantSpec) limitRange(id Identity, hard corev1.ResourceList) (*corev1.LimitRange, field.ErrorList) {
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

// queue is the tenant's Volcano queue; its capability mirrors the quota's
// CPU, memory and accelerator requests, so that Volcano does not admit a
// job the quota would refuse pod by pod.
func (t *TenantSpec) queue(id Identity, hard corev1.ResourceList) (*vcscheduling.Queue, field.ErrorList) {
	var errs field.ErrorList
	if t.weight < 1 || t.weight > math.MaxInt32 {
		errs = append(errs, field.Invalid(field.NewPath("queue", "spec", "weight"), t.weight, fmt.Sprintf("must be from 1 to %d", math.MaxInt32)))
	}
	capability := corev1.ResourceList{}
	if q, ok := hard[corev1.ResourceRequestsCPU]; ok {
		capability[corev1.ResourceCPU] = q.DeepCopy()
	}
	if q, ok := hard[corev1.ResourceRequestsMemory]; ok {
		capability[corev1.ResourceMemory] = q.DeepCopy()
	}
	for _, r := range t.accels {
		if q, ok := hard[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(r))]; ok {
			capability[r] = q.DeepCopy()
		}
	}
	if len(capability) == 0 {
		capability = nil
	}
	var reclaimable *bool
	if t.reclaimable != nil {
		v := *t.reclaimable
		reclaimable = &v
	}
	return &vcscheduling.Queue{
		TypeMeta:   metav1.TypeMeta{APIVersion: vcscheduling.SchemeGroupVersion.String(), Kind: "Queue"},
		ObjectMeta: id.ObjectMeta(t.name, "", nil, nil),
		Spec:       vcscheduling.QueueSpec{Weight: int32(min(max(t.weight, 0), math.MaxInt32)), Capability: capability, Reclaimable: reclaimable},
	}, errs
}

// queueKind is how a Client reads the Volcano Queue of a Tenant: Volcano's
// queue controller opens a new queue (status.state Open) and jobs are
// scheduled from it only then; Closed or Closing refuses new jobs
// (volcano.sh/apis v1.14.0 pkg/apis/scheduling/v1beta1/types.go,
// QueueState). A queue no controller has opened yet is in progress.
var queueKind = Kind{
	GroupKind: vcscheduling.SchemeGroupVersion.WithKind("Queue").GroupKind(),
	Status: TypedStatus(func(q *vcscheduling.Queue) ObjectStatus {
		switch q.Status.State {
		case vcscheduling.QueueStateOpen:
			return ObjectStatus{Phase: Ready, Reason: string(q.Status.State)}
		case vcscheduling.QueueStateClosed, vcscheduling.QueueStateClosing:
			return ObjectStatus{Phase: Failed, Reason: string(q.Status.State), Message: "the queue takes no new jobs"}
		case vcscheduling.QueueStateUnknown:
			return ObjectStatus{Phase: Unknown, Reason: string(q.Status.State), Message: "Volcano reports the queue's state as Unknown"}
		}
		return ObjectStatus{Phase: InProgress, Reason: "NotOpened", Message: "Volcano's controller has not opened the queue yet"}
	}),
}

// QuotaExceededError is the API server refusing to create an object
// because it would take a namespace over a ResourceQuota. Its fields hold
// what the server said, e.g. Requested "requests.nvidia.com/gpu=16".
type QuotaExceededError struct {
	Quota     string
	Requested string
	Used      string
	Limited   string
	Err       error
}

func (e *QuotaExceededError) Error() string {
	if e == nil {
		return "<nil QuotaExceededError>"
	}
	return fmt.Sprintf("exceeded quota %s: requested %s, used %s, limited to %s", e.Quota, e.Requested, e.Used, e.Limited)
}

// Unwrap returns the API server's error.
func (e *QuotaExceededError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// AsQuotaExceeded reports whether err (from Apply or any client call) is
// the API server refusing a request over a ResourceQuota, and what the
// server said about it.
func AsQuotaExceeded(err error) (*QuotaExceededError, bool) {
	var qe *QuotaExceededError
	if errors.As(err, &qe) {
		return qe, true
	}
	var status apierrors.APIStatus
	if !apierrors.IsForbidden(err) || !errors.As(err, &status) {
		return nil, false
	}
	qe, ok := parseQuotaExceeded(status.Status().Message)
	if !ok {
		return nil, false
	}
	qe.Err = err
	return qe, true
}

// parseQuotaExceeded reads what the quota admission plugin says when it
// refuses a request, wherever it is quoted (an API error, a controller's
// event): "exceeded quota: NAME, requested: R, used: U, limited: L", each
// list "resource=quantity" joined by commas
// (k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go).
func parseQuotaExceeded(msg string) (*QuotaExceededError, bool) {
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return nil, false
	}
	qe := &QuotaExceededError{}
	qe.Quota, rest, _ = strings.Cut(rest, ", requested: ")
	qe.Requested, rest, _ = strings.Cut(rest, ", used: ")
	qe.Used, qe.Limited, _ = strings.Cut(rest, ", limited: ")
	qe.Limited = strings.TrimSpace(qe.Limited)
	return qe, true
}
