package tenant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

func tenantQuantities(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestTenantObjects(t *testing.T) {
	objs, err := tenant.New("team-a").
		Label("cost-center", "ml-42").
		Editors("alice", "bob").EditorGroups("ml-engineers").
		Viewers("carol").ViewerGroups("auditors").
		CPU("256").Memory("2Ti").Pods(200).Storage("50Ti").
		Accelerators(hardware.H100, 32).
		Accelerators(hardware.Ascend910B3, 16).
		Quota("persistentvolumeclaims", "40").
		DefaultCPU("500m", "2").DefaultMemory("1Gi", "4Gi").
		QueueWeight(3).QueueReclaimable(false).
		AllowIngressFromNamespace("monitoring").
		Objects()
	require.NoError(t, err)
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+" "+o.GetName())
	}
	assert.Equal(t, []string{
		"Namespace team-a", "ResourceQuota team-a", "LimitRange team-a", "Queue team-a",
		"ServiceAccount cube-pipeline", "Role cube-pipeline", "RoleBinding cube-pipeline",
		"Role team-a-cube-edit", "Role team-a-cube-view",
		"RoleBinding team-a-edit", "RoleBinding team-a-cube-edit", "RoleBinding team-a-view", "RoleBinding team-a-cube-view",
		"NetworkPolicy team-a-isolation", "NetworkPolicy team-a-allow-kuberay", "NetworkPolicy team-a-allow-prometheus",
	}, kinds)

	ns := objs[0].(*corev1.Namespace)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ns.TypeMeta)
	assert.Equal(t, "team-a", ns.Name)
	assert.Equal(t, map[string]string{
		"cost-center":                                "ml-42",
		tenant.LabelQueueing:                         "Volcano",
		"pod-security.kubernetes.io/enforce":         "baseline",
		"pod-security.kubernetes.io/enforce-version": "latest",
		"pod-security.kubernetes.io/warn":            "baseline",
		"pod-security.kubernetes.io/audit":           "baseline",
		cube.LabelName:                               "team-a",
		cube.LabelManagedBy:                          "cube",
		cube.LabelPartOf:                             "team-a",
		cube.LabelKind:                               "tenant",
		cube.LabelRelease:                            "team-a",
	}, ns.Labels)

	quota := objs[1].(*corev1.ResourceQuota)
	assert.Equal(t, "v1", quota.APIVersion)
	assert.Equal(t, "ResourceQuota", quota.Kind)
	assert.Equal(t, "team-a", quota.Name)
	assert.Equal(t, "team-a", quota.Namespace)
	assert.Equal(t, map[string]string{
		"requests.cpu":                  "256",
		"requests.memory":               "2Ti",
		"pods":                          "200",
		"requests.storage":              "50Ti",
		"requests.nvidia.com/gpu":       "32",
		"requests.huawei.com/Ascend910": "16",
		"persistentvolumeclaims":        "40",
	}, tenantQuantities(quota.Spec.Hard))

	lr := objs[2].(*corev1.LimitRange)
	assert.Equal(t, "LimitRange", lr.Kind)
	require.Len(t, lr.Spec.Limits, 1)
	assert.Equal(t, corev1.LimitTypeContainer, lr.Spec.Limits[0].Type)
	assert.Equal(t, map[string]string{"cpu": "500m", "memory": "1Gi"}, tenantQuantities(lr.Spec.Limits[0].DefaultRequest))
	assert.Equal(t, map[string]string{"cpu": "2", "memory": "4Gi"}, tenantQuantities(lr.Spec.Limits[0].Default))

	queue := objs[3].(*vcscheduling.Queue)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "scheduling.volcano.sh/v1beta1", Kind: "Queue"}, queue.TypeMeta)
	assert.Equal(t, "team-a", queue.Name)
	assert.Empty(t, queue.Namespace, "queues are cluster-scoped")
	assert.Equal(t, int32(3), queue.Spec.Weight)
	require.NotNil(t, queue.Spec.Reclaimable)
	assert.False(t, *queue.Spec.Reclaimable)
	assert.Equal(t, map[string]string{"cpu": "256", "memory": "2Ti", "nvidia.com/gpu": "32", "huawei.com/Ascend910": "16"},
		tenantQuantities(queue.Spec.Capability))

	edit := objs[9].(*rbacv1.RoleBinding)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"}, edit.TypeMeta)
	assert.Equal(t, "team-a-edit", edit.Name)
	assert.Equal(t, "team-a", edit.Namespace)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "edit"}, edit.RoleRef)
	assert.Equal(t, []rbacv1.Subject{
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "alice"},
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "bob"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "ml-engineers"},
	}, edit.Subjects)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "team-a-cube-edit"}, objs[10].(*rbacv1.RoleBinding).RoleRef)
	assert.Equal(t, edit.Subjects, objs[10].(*rbacv1.RoleBinding).Subjects)
	view := objs[11].(*rbacv1.RoleBinding)
	assert.Equal(t, "team-a-view", view.Name)
	assert.Equal(t, "view", view.RoleRef.Name)
	assert.Equal(t, []rbacv1.Subject{
		{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "carol"},
		{Kind: "Group", APIGroup: "rbac.authorization.k8s.io", Name: "auditors"},
	}, view.Subjects)

	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "team-a-cube-view"}, objs[12].(*rbacv1.RoleBinding).RoleRef)
	assert.Equal(t, view.Subjects, objs[12].(*rbacv1.RoleBinding).Subjects)

	np := objs[13].(*networkingv1.NetworkPolicy)
	assert.Equal(t, metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}, np.TypeMeta)
	assert.Equal(t, "team-a-isolation", np.Name)
	assert.Equal(t, "team-a", np.Namespace)
	assert.Equal(t, networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{PodSelector: &metav1.LabelSelector{}},
			{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}},
		}}},
	}, np.Spec)

	for _, o := range objs {
		assert.Equal(t, "team-a", o.GetLabels()[cube.LabelRelease], "%T", o)
	}
}

func TestTenantDefaults(t *testing.T) {
	team := tenant.New("team-b")
	objs, err := team.Objects()
	require.NoError(t, err)
	require.Len(t, objs, 12, "no role bindings without members")
	assert.Equal(t, "baseline", objs[0].GetLabels()[tenant.LabelPodSecurityEnforce])
	assert.Empty(t, objs[1].(*corev1.ResourceQuota).Spec.Hard)
	lr := objs[2].(*corev1.LimitRange).Spec.Limits[0]
	assert.Equal(t, map[string]string{"cpu": tenant.DefaultCPURequest, "memory": tenant.DefaultMemoryRequest}, tenantQuantities(lr.DefaultRequest))
	assert.Nil(t, lr.Default, "no default limit: a limit the engine did not ask for kills it")
	queue := objs[3].(*vcscheduling.Queue)
	assert.Equal(t, int32(1), queue.Spec.Weight)
	assert.Nil(t, queue.Spec.Capability)
	assert.Nil(t, queue.Spec.Reclaimable, "Volcano's default")
	np := objs[9].(*networkingv1.NetworkPolicy)
	assert.Equal(t, []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}, np.Spec.Ingress[0].From)

	rdma, err := tenant.New("team-c").AllowRDMA().Objects()
	require.NoError(t, err)
	for _, k := range []string{tenant.LabelPodSecurityEnforce, tenant.LabelPodSecurityWarn, tenant.LabelPodSecurityAudit} {
		assert.Equal(t, "privileged", rdma[0].GetLabels()[k])
	}
	restricted, err := tenant.New("team-d").PodSecurity(tenant.PodSecurityRestricted).Objects()
	require.NoError(t, err)
	assert.Equal(t, "restricted", restricted[0].GetLabels()[tenant.LabelPodSecurityEnforce])

	// Every call returns fresh objects.
	again, err := team.Objects()
	require.NoError(t, err)
	objs[0].SetLabels(nil)
	assert.NotEmpty(t, again[0].GetLabels())
}

func TestTenantValidation(t *testing.T) {
	_, err := tenant.New("Team_A").
		Label("bad key!", "v").Label("ok", "bad value!").
		PodSecurity("lenient").
		Editors("").ViewerGroups("").
		CPU("lots").Memory("-1Gi").Accelerators(hardware.H100, -2).
		Quota("bad/key/name", "1").
		DefaultCPU("4", "2").DefaultMemory("x", "y").
		QueueWeight(0).
		AllowIngressFromNamespace("Other_NS").
		Objects()
	require.Error(t, err)
	var agg utilerrors.Aggregate
	require.ErrorAs(t, err, &agg)
	var got []string
	for _, e := range agg.Errors() {
		got = append(got, e.Error())
	}
	assert.Equal(t, []string{
		`metadata.name: Invalid value: "Team_A": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
		`metadata.labels[pod-security.kubernetes.io/enforce]: Unsupported value: "lenient": supported values: "privileged", "baseline", "restricted"`,
		`metadata.labels[bad key!]: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		`metadata.labels[ok]: Invalid value: "bad value!": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		`spec.hard[requests.cpu]: Invalid value: "lots": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`spec.hard[requests.memory]: Invalid value: "-1Gi": must not be negative`,
		`spec.hard[requests.nvidia.com/gpu]: Invalid value: "-2": must not be negative`,
		`spec.hard[bad/key/name]: Invalid value: "bad/key/name": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')`,
		`spec.limits[0].defaultRequest[cpu]: Invalid value: "4": must not exceed the default limit 2`,
		`spec.limits[0].defaultRequest[memory]: Invalid value: "x": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`spec.limits[0].default[memory]: Invalid value: "y": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'`,
		`queue.spec.weight: Invalid value: 0: must be from 1 to 2147483647`,
		`roleBindings[Team_A-edit].subjects[0].name: Required value: a user or group name is required`,
		`roleBindings[Team_A-view].subjects[0].name: Required value: a user or group name is required`,
		`networkPolicy.spec.ingress[0].from[1]: Invalid value: "Other_NS": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
	}, got)
}

// Priorities refuses, all at once, a bad release name, names that are no
// object name or label value, a name given twice and an empty list; a
// job's WorkloadPriority is checked as an object name and label value.
func TestPrioritiesValidation(t *testing.T) {
	_, err := tenant.Priorities("Bad_Release",
		tenant.Priority{Name: "ok", Value: 1},
		tenant.Priority{Name: "Not_A_Name", Value: 2},
		tenant.Priority{Name: "ok", Value: 3},
	).Objects()
	require.Error(t, err)
	for _, want := range []string{
		`metadata.name: Invalid value: "Bad_Release"`,
		`priorities[1].name: Invalid value: "Not_A_Name"`,
		`priorities[2].name: Duplicate value: "ok"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = tenant.Priorities("p").Objects()
	assert.ErrorContains(t, err, "priorities: Required value: at least one priority")

	_, err = train.PyTorch("j").Image("busybox").WorkloadPriority("Urgent!").Objects()
	assert.ErrorContains(t, err, `metadata.labels[kueue.x-k8s.io/priority-class]: Invalid value: "Urgent!"`)
	objs, err := train.PyTorch("j").Image("busybox").WorkloadPriority("").Objects()
	require.NoError(t, err)
	assert.NotContains(t, objs[0].GetLabels(), "kueue.x-k8s.io/priority-class", "empty: no priority label")
}

// PodPriorities refuses, all at once, a bad release name, a name that is
// no object name, a name in the system's reserved prefix, a value above
// the highest a user's class may have, a second default and a name given
// twice; it renders each class's preemption policy.
func TestPodPrioritiesValidation(t *testing.T) {
	_, err := tenant.PodPriorities("Bad_Release",
		tenant.PodPriority{Name: "ok", Value: 1, Default: true},
		tenant.PodPriority{Name: "Not_A_Name", Value: 2},
		tenant.PodPriority{Name: "system-mine", Value: 3},
		tenant.PodPriority{Name: "huge", Value: 1_000_000_001, Default: true},
		tenant.PodPriority{Name: "ok", Value: 5},
	).Objects()
	require.Error(t, err)
	for _, want := range []string{
		`metadata.name: Invalid value: "Bad_Release"`,
		`priorities[1].name: Invalid value: "Not_A_Name"`,
		`priorities[2].name: Invalid value: "system-mine": the prefix "system-" is reserved for the system's classes`,
		`priorities[3].value: Invalid value: 1000000001: must be at most 1000000000`,
		`priorities[3].default: Invalid value: true: only one class may be the default`,
		`priorities[4].name: Duplicate value: "ok"`,
	} {
		assert.Contains(t, err.Error(), want)
	}
	_, err = tenant.PodPriorities("p").Objects()
	assert.ErrorContains(t, err, "priorities: Required value: at least one priority")

	objs, err := tenant.PodPriorities("p",
		tenant.PodPriority{Name: "batch", Value: -10, NoPreemption: true},
		tenant.PodPriority{Name: "urgent", Value: 1_000_000_000},
	).Objects()
	require.NoError(t, err)
	require.Len(t, objs, 2)
	for i, want := range []corev1.PreemptionPolicy{corev1.PreemptNever, corev1.PreemptLowerPriority} {
		pc, ok := objs[i].(*schedulingv1.PriorityClass)
		require.True(t, ok, "%T", objs[i])
		require.NotNil(t, pc.PreemptionPolicy)
		assert.Equal(t, want, *pc.PreemptionPolicy, pc.Name)
		assert.Equal(t, "p", pc.Labels[cube.LabelRelease], pc.Name)
	}
}
