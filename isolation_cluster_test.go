package cube_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testenv"
)

// A tenant's NetworkPolicies enforced for real (kube-network-policies on
// the test cluster's pod bridge): a pod of another namespace cannot reach
// the tenant's pods, the tenant's own pods can, and so can a pod the
// tenant's Prometheus exception names, from any namespace.
func TestTenantIsolationEnforced(t *testing.T) {
	c := testenv.GetCluster(t)
	ctx := t.Context()
	tenant := "iso-" + rand.String(5)
	cl, err := cube.New(c.Config, cube.WithNamespace(tenant))
	require.NoError(t, err)
	rel, err := cl.Apply(ctx, cube.Tenant(tenant).CPU("4").Memory("8Gi"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = rel.Delete(context.WithoutCancel(ctx)) })
	outside := c.Namespace(t)
	pods := c.Clientset.CoreV1()

	server := isolationPod("web", c.Images.Python, map[string]string{"app": "web"},
		"python3", "-m", "http.server", "8080")
	server, err = pods.Pods(tenant).Create(ctx, server, metav1.CreateOptions{})
	require.NoError(t, err)
	var ip string
	require.NoError(t, wait.PollUntilContextTimeout(ctx, 300*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := pods.Pods(tenant).Get(ctx, server.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		ip = p.Status.PodIP
		return p.Status.Phase == corev1.PodRunning && ip != "", nil
	}), "the tenant's server pod runs")
	// The server answers this host (the node's root user, which the
	// enforcer lets through as kubelet probes are) once it listens.
	probe := fmt.Sprintf("import urllib.request,sys\ntry:\n urllib.request.urlopen('http://%s:8080/', timeout=4)\n print('reached')\nexcept Exception as e:\n print('blocked', e); sys.exit(3)\n", ip)

	cases := []struct {
		name, ns string
		labels   map[string]string
		reach    bool
	}{
		{"tenant-own-pod", tenant, nil, true},
		{"other-namespace", outside, nil, false},
		{"prometheus-elsewhere", outside, map[string]string{"app.kubernetes.io/name": "prometheus"}, true},
	}
	for _, tc := range cases {
		p := isolationPod(tc.name, c.Images.Python, tc.labels, "python3", "-c", probe)
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		_, err := pods.Pods(tc.ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err, tc.name)
	}
	for _, tc := range cases {
		phase, logs := finished(t, c.Clientset, tc.ns, tc.name)
		if tc.reach {
			assert.Equal(t, corev1.PodSucceeded, phase, "%s should reach the tenant's pod: %s", tc.name, logs)
			assert.Contains(t, logs, "reached", tc.name)
		} else {
			assert.Equal(t, corev1.PodFailed, phase, "%s should be blocked: %s", tc.name, logs)
			assert.Contains(t, logs, "blocked", tc.name)
		}
	}
}

// isolationPod is a pod the restricted Pod Security level admits.
func isolationPod(name, image string, labels map[string]string, command ...string) *corev1.Pod {
	no, yes := false, true
	uid := int64(65534)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: &yes, RunAsUser: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "main", Image: image, Command: command, ImagePullPolicy: corev1.PullIfNotPresent,
				WorkingDir: "/tmp",
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: &no,
					Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				},
			}},
		},
	}
}

// finished waits for a pod to end and returns its phase and log.
func finished(t *testing.T, cs kubernetes.Interface, ns, name string) (corev1.PodPhase, string) {
	t.Helper()
	var phase corev1.PodPhase
	err := wait.PollUntilContextTimeout(t.Context(), 300*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	require.NoError(t, err, "pod %s/%s ends", ns, name)
	data, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(t.Context())
	require.NoError(t, err)
	return phase, strings.TrimSpace(string(data))
}
