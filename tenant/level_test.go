package tenant_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testpod"
	"github.com/cubestudio/cube/tenant"
)

// restrictedPod is a pod with what the restricted level asks: a non-root
// user, the runtime's seccomp profile, no privilege escalation and no
// capabilities.
func restrictedPod(name string) cube.Workload {
	id := cube.Identity{Kind: "pod", Release: name}
	return cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](1000),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: ptr.To(false), Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	})
}

func TestTenantLevelFor(t *testing.T) {
	team := tenant.New("team-a")

	level, err := tenant.LevelFor(team, restrictedPod("strict"))
	require.NoError(t, err)
	assert.Equal(t, tenant.PodSecurityRestricted, level)

	// A pod that runs as its image's user needs baseline.
	level, err = tenant.LevelFor(team, restrictedPod("strict"), testpod.Pod("plain", nil))
	require.NoError(t, err)
	assert.Equal(t, tenant.PodSecurityBaseline, level)

	// The chosen level is one the tenant enforces and admits them at.
	team.PodSecurity(level)
	require.NoError(t, tenant.Admits(team, restrictedPod("strict"), testpod.Pod("plain", nil)))
	objs, err := team.Objects()
	require.NoError(t, err)
	assert.Equal(t, "baseline", objs[0].GetLabels()[tenant.LabelPodSecurityEnforce])

	// RDMA's IPC_LOCK passes no level LevelFor chooses: it says which pod
	// and why, and how to opt in, rather than choosing privileged.
	_, err = tenant.LevelFor(team, testpod.Pod("plain", nil), testpod.Pod("rdma", nil, "IPC_LOCK"))
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "baseline:latest", ps.Level)
	require.Len(t, ps.Violations, 1)
	assert.Equal(t, "rdma", ps.Violations[0].Object.Name)
	assert.Equal(t, `non-default capabilities (container "main" must not include "IPC_LOCK" in securityContext.capabilities.add)`, ps.Violations[0].Reasons)
	assert.Contains(t, err.Error(), "AllowRDMA()")

	_, err = tenant.LevelFor(team, testpod.Pod("plain", nil), nil)
	require.ErrorContains(t, err, "workload 1: workload is nil")
	_, err = tenant.LevelFor((*tenant.Spec)(nil), restrictedPod("strict"))
	require.ErrorContains(t, err, "Spec is nil or zero")
	_, err = tenant.LevelFor((&tenant.Spec{}), restrictedPod("strict"))
	require.ErrorContains(t, err, "Spec is nil or zero")
}
