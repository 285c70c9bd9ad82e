package cube

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"
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

// The ClusterRoles every cluster has, to which tenant members are bound.
const (
	ClusterRoleEdit = "edit"
	ClusterRoleView = "view"
)

// Defaults of a tenant's LimitRange: what a container that states no
// requests or limits gets, so that it passes the CPU and memory quota.
const (
	DefaultCPURequest    = "100m"
	DefaultCPULimit      = "1"
	DefaultMemoryRequest = "128Mi"
	DefaultMemoryLimit   = "1Gi"
)

// TenantBuilder builds a team's share of a cluster: its namespace, quota,
// container defaults, Volcano queue, members and network isolation.
// Create one with Tenant; it is a Workload.
type TenantBuilder struct {
	name        string
	labels      map[string]string
	podSecurity PodSecurityLevel
	editors     []rbacv1.Subject
	viewers     []rbacv1.Subject
	hard        map[corev1.ResourceName]string
	accels      []corev1.ResourceName
	defaults    map[corev1.ResourceName][2]string // request, limit
	weight      int
	reclaimable *bool
	allowFrom   []string
}

// Tenant starts the tenant named name, which also names its namespace and
// Volcano queue. Its namespace enforces the baseline Pod Security level;
// its containers default to DefaultCPURequest/DefaultCPULimit and
// DefaultMemoryRequest/DefaultMemoryLimit; ingress from other namespaces
// is denied.
//
// A tenant whose jobs use RDMA (InfiniBand or RoCE fabrics) must opt in with
// AllowRDMA: the pods need the IPC_LOCK capability, which the baseline level
// refuses, so the namespace runs at the privileged level instead.
func Tenant(name string) *TenantBuilder {
	return &TenantBuilder{
		name:        name,
		podSecurity: PodSecurityBaseline,
		hard:        map[corev1.ResourceName]string{},
		defaults: map[corev1.ResourceName][2]string{
			corev1.ResourceCPU:    {DefaultCPURequest, DefaultCPULimit},
			corev1.ResourceMemory: {DefaultMemoryRequest, DefaultMemoryLimit},
		},
		weight: 1,
	}
}

// Name returns the tenant's name (and namespace).
func (t *TenantBuilder) Name() string { return t.name }

// Label adds a label to the namespace.
func (t *TenantBuilder) Label(key, value string) *TenantBuilder {
	if t.labels == nil {
		t.labels = map[string]string{}
	}
	t.labels[key] = value
	return t
}

// Editors binds users to the ClusterRole edit in the namespace.
func (t *TenantBuilder) Editors(users ...string) *TenantBuilder {
	t.editors = appendSubjects(t.editors, rbacv1.UserKind, users)
	return t
}

// EditorGroups binds groups to the ClusterRole edit in the namespace.
func (t *TenantBuilder) EditorGroups(groups ...string) *TenantBuilder {
	t.editors = appendSubjects(t.editors, rbacv1.GroupKind, groups)
	return t
}

// Viewers binds users to the ClusterRole view in the namespace.
func (t *TenantBuilder) Viewers(users ...string) *TenantBuilder {
	t.viewers = appendSubjects(t.viewers, rbacv1.UserKind, users)
	return t
}

// ViewerGroups binds groups to the ClusterRole view in the namespace.
func (t *TenantBuilder) ViewerGroups(groups ...string) *TenantBuilder {
	t.viewers = appendSubjects(t.viewers, rbacv1.GroupKind, groups)
	return t
}

func appendSubjects(to []rbacv1.Subject, kind string, names []string) []rbacv1.Subject {
	for _, n := range names {
		to = append(to, rbacv1.Subject{Kind: kind, APIGroup: rbacv1.GroupName, Name: n})
	}
	return to
}

// CPU limits the namespace's CPU requests and limits, each, to q ("64").
func (t *TenantBuilder) CPU(q string) *TenantBuilder {
	t.hard[corev1.ResourceRequestsCPU] = q
	t.hard[corev1.ResourceLimitsCPU] = q
	return t
}

// Memory limits the namespace's memory requests and limits, each, to q
// ("512Gi").
func (t *TenantBuilder) Memory(q string) *TenantBuilder {
	t.hard[corev1.ResourceRequestsMemory] = q
	t.hard[corev1.ResourceLimitsMemory] = q
	return t
}

// Pods limits how many pods the namespace holds.
func (t *TenantBuilder) Pods(n int) *TenantBuilder {
	t.hard[corev1.ResourcePods] = fmt.Sprint(n)
	return t
}

// Storage limits the storage all the namespace's claims request ("10Ti").
func (t *TenantBuilder) Storage(q string) *TenantBuilder {
	t.hard[corev1.ResourceRequestsStorage] = q
	return t
}

// Accelerators limits the devices of one extended resource the namespace
// requests, e.g. Accelerators("nvidia.com/gpu", 16) or
// Accelerators("huawei.com/Ascend910", 32): the quota gets
// requests.<resource> and the Volcano queue's capability <resource>. Call
// it once per resource name in use (a cluster with several device plugins
// has several).
func (t *TenantBuilder) Accelerators(resourceName corev1.ResourceName, n int) *TenantBuilder {
	t.hard[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+string(resourceName))] = fmt.Sprint(n)
	if !slices.Contains(t.accels, resourceName) {
		t.accels = append(t.accels, resourceName)
	}
	return t
}

// Quota sets any ResourceQuota hard limit (e.g. "persistentvolumeclaims",
// "services.loadbalancers"), replacing one of the same name.
func (t *TenantBuilder) Quota(name corev1.ResourceName, q string) *TenantBuilder {
	t.hard[name] = q
	return t
}

// DefaultCPU sets the CPU request and limit a container gets when it
// states none.
func (t *TenantBuilder) DefaultCPU(request, limit string) *TenantBuilder {
	t.defaults[corev1.ResourceCPU] = [2]string{request, limit}
	return t
}

// DefaultMemory sets the memory request and limit a container gets when it
// states none.
func (t *TenantBuilder) DefaultMemory(request, limit string) *TenantBuilder {
	t.defaults[corev1.ResourceMemory] = [2]string{request, limit}
	return t
}

// QueueWeight sets the weight of the tenant's Volcano queue: its share of
// the cluster relative to the other queues (default 1).
func (t *TenantBuilder) QueueWeight(n int) *TenantBuilder { t.weight = n; return t }

// QueueReclaimable says whether other queues may reclaim resources the
// tenant's queue borrowed beyond its share (Volcano's default is true).
func (t *TenantBuilder) QueueReclaimable(on bool) *TenantBuilder { t.reclaimable = &on; return t }

// PodSecurity sets the Pod Security level the namespace enforces (default
// PodSecurityBaseline).
func (t *TenantBuilder) PodSecurity(level PodSecurityLevel) *TenantBuilder {
	t.podSecurity = level
	return t
}

// AllowRDMA lets the tenant's pods use RDMA fabrics: they need the
// IPC_LOCK capability to pin memory, which the baseline level refuses, so
// the namespace enforces the privileged level. It is an explicit opt-in
// because that level also admits privileged containers and host paths.
func (t *TenantBuilder) AllowRDMA() *TenantBuilder { return t.PodSecurity(PodSecurityPrivileged) }

// AllowIngressFromNamespace admits traffic from the pods of another
// namespace (a monitoring or ingress namespace), which the tenant's
// NetworkPolicy otherwise denies.
func (t *TenantBuilder) AllowIngressFromNamespace(namespace string) *TenantBuilder {
	t.allowFrom = append(t.allowFrom, namespace)
	return t
}

// Identity returns the identity that labels the tenant's objects.
func (t *TenantBuilder) Identity() Identity { return Identity{Kind: "tenant", Release: t.name} }

var podSecurityLevels = []PodSecurityLevel{PodSecurityPrivileged, PodSecurityBaseline, PodSecurityRestricted}

// Objects validates the tenant and returns, in a fresh slice of fresh
// objects: the Namespace, a ResourceQuota and a LimitRange named after the
// tenant, its Volcano Queue, RoleBindings <name>-edit and <name>-view (when
// they have members) and the NetworkPolicy <name>-isolation. Every problem
// is reported at once.
func (t *TenantBuilder) Objects() ([]client.Object, error) {
	var errs field.ErrorList
	id := t.Identity()
	namePath := field.NewPath("metadata", "name")
	for _, msg := range validation.IsDNS1123Label(t.name) {
		errs = append(errs, field.Invalid(namePath, t.name, msg))
	}
	if !slices.Contains(podSecurityLevels, t.podSecurity) {
		errs = append(errs, field.NotSupported(field.NewPath("metadata", "labels").Key(LabelPodSecurityEnforce), t.podSecurity, podSecurityLevels))
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

	nsLabels := maps.Clone(t.labels)
	if nsLabels == nil {
		nsLabels = map[string]string{}
	}
	for _, k := range []string{LabelPodSecurityEnforce, LabelPodSecurityWarn, LabelPodSecurityAudit} {
		nsLabels[k] = string(t.podSecurity)
	}
	nsLabels[LabelPodSecurityEnforceVersion] = "latest"
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: id.ObjectMeta(t.name, "", nsLabels, nil),
	}

	hard, hardErrs := ParseResourceList(t.hard, field.NewPath("spec", "hard"))
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

	limitRange, lrErrs := t.limitRange(id)
	errs = append(errs, lrErrs...)
	queue, qErrs := t.queue(id, hard)
	errs = append(errs, qErrs...)

	objs := []client.Object{ns, quota, limitRange, queue}
	for _, b := range []struct {
		role     string
		subjects []rbacv1.Subject
	}{{ClusterRoleEdit, t.editors}, {ClusterRoleView, t.viewers}} {
		if len(b.subjects) == 0 {
			continue
		}
		rbName := t.name + "-" + b.role
		for i, s := range b.subjects {
			if s.Name == "" {
				errs = append(errs, field.Required(field.NewPath("roleBindings").Key(rbName).Child("subjects").Index(i).Child("name"), "a user or group name is required"))
			}
		}
		objs = append(objs, &rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: rbacv1.SchemeGroupVersion.String(), Kind: "RoleBinding"},
			ObjectMeta: id.ObjectMeta(rbName, t.name, nil, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: b.role},
			Subjects:   slices.Clone(b.subjects),
		})
	}
	policy, npErrs := t.networkPolicy(id)
	errs = append(errs, npErrs...)
	objs = append(objs, policy)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return objs, nil
}

func (t *TenantBuilder) limitRange(id Identity) (*corev1.LimitRange, field.ErrorList) {
	var errs field.ErrorList
	item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: corev1.ResourceList{}, DefaultRequest: corev1.ResourceList{}}
	p := field.NewPath("spec", "limits").Index(0)
	for _, name := range slices.Sorted(maps.Keys(t.defaults)) {
		d := t.defaults[name]
		req, reqErr := ParseQuantity(p.Child("defaultRequest").Key(string(name)), d[0], NonNegative)
		lim, limErr := ParseQuantity(p.Child("default").Key(string(name)), d[1], NonNegative)
		if reqErr != nil {
			errs = append(errs, reqErr)
		}
		if limErr != nil {
			errs = append(errs, limErr)
		}
		if reqErr != nil || limErr != nil {
			continue
		}
		if req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(p.Child("defaultRequest").Key(string(name)), d[0], "must not exceed the default limit "+d[1]))
		}
		item.DefaultRequest[name], item.Default[name] = req, lim
	}
	return &corev1.LimitRange{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "LimitRange"},
		ObjectMeta: id.ObjectMeta(t.name, t.name, nil, nil),
		Spec:       corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}},
	}, errs
}

// queue is the tenant's Volcano queue; its capability mirrors the quota's
// CPU, memory and accelerator limits, so that Volcano does not admit a job
// the quota would refuse pod by pod.
func (t *TenantBuilder) queue(id Identity, hard corev1.ResourceList) (*vcscheduling.Queue, field.ErrorList) {
	var errs field.ErrorList
	if t.weight < 1 {
		errs = append(errs, field.Invalid(field.NewPath("queue", "spec", "weight"), t.weight, "must be at least 1"))
	}
	capability := corev1.ResourceList{}
	if q, ok := hard[corev1.ResourceLimitsCPU]; ok {
		capability[corev1.ResourceCPU] = q.DeepCopy()
	}
	if q, ok := hard[corev1.ResourceLimitsMemory]; ok {
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
		Spec:       vcscheduling.QueueSpec{Weight: int32(max(t.weight, 0)), Capability: capability, Reclaimable: reclaimable},
	}, errs
}

// networkPolicy admits ingress from the namespace's own pods and the
// namespaces allowed explicitly, and denies the rest.
func (t *TenantBuilder) networkPolicy(id Identity) (*networkingv1.NetworkPolicy, field.ErrorList) {
	var errs field.ErrorList
	peers := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
	for i, ns := range t.allowFrom {
		for _, msg := range validation.IsDNS1123Label(ns) {
			errs = append(errs, field.Invalid(field.NewPath("networkPolicy", "spec", "ingress").Index(0).Child("from").Index(i+1), ns, msg))
		}
		peers = append(peers, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
			MatchLabels: map[string]string{corev1.LabelMetadataName: ns},
		}})
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: networkingv1.SchemeGroupVersion.String(), Kind: "NetworkPolicy"},
		ObjectMeta: id.ObjectMeta(t.name+"-isolation", t.name, nil, nil),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: peers}},
		},
	}, errs
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
	return fmt.Sprintf("exceeded quota %s: requested %s, used %s, limited to %s", e.Quota, e.Requested, e.Used, e.Limited)
}

// Unwrap returns the API server's error.
func (e *QuotaExceededError) Unwrap() error { return e.Err }

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
	msg := status.Status().Message
	_, rest, ok := strings.Cut(msg, "exceeded quota: ")
	if !ok {
		return nil, false
	}
	qe = &QuotaExceededError{Err: err}
	qe.Quota, rest, _ = strings.Cut(rest, ", requested: ")
	qe.Requested, rest, _ = strings.Cut(rest, ", used: ")
	qe.Used, qe.Limited, _ = strings.Cut(rest, ", limited: ")
	return qe, true
}
