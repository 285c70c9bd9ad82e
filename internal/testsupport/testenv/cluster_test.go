package testenv_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// waitPod waits until the pod reaches one of phases and returns it.
func waitPod(t *testing.T, c *testenv.Cluster, ns, name string, timeout time.Duration, phases ...corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	err := wait.PollUntilContextTimeout(t.Context(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		pod = p
		for _, phase := range phases {
			if p.Status.Phase == phase {
				return true, nil
			}
		}
		return false, nil
	})
	require.NoError(t, err, "pod %s/%s never reached %v: %+v", ns, name, phases, pod)
	return pod
}

func podLogs(t *testing.T, c *testenv.Cluster, ns, name string) string {
	t.Helper()
	stream, err := c.Clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).Stream(t.Context())
	require.NoError(t, err)
	defer stream.Close()
	data, err := io.ReadAll(stream)
	require.NoError(t, err)
	return string(data)
}

// The node runs pods for real: a pod is scheduled, gets an address on the
// pod bridge, resolves a Service through cluster DNS, reaches it through
// kube-proxy's rules, and its logs come back through the kubelet. A
// projected service-account token reaches the API server through the
// kubernetes Service.
func TestClusterRunsPods(t *testing.T) {
	c := testenv.GetCluster(t)
	t.Logf("cluster start-up %s (this binary's wait %s)", c.ClusterStartup, c.StartupTime)
	ns := c.Namespace(t)
	ctx := t.Context()
	pods := c.Clientset.CoreV1().Pods(ns)

	server := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "web", Image: c.Images.Busybox,
			Command: []string{"sh", "-c", "mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www"},
			Ports:   []corev1.ContainerPort{{ContainerPort: 8080}},
		}}},
	}
	_, err := pods.Create(ctx, server, metav1.CreateOptions{})
	require.NoError(t, err)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt(8080)}}},
	}
	_, err = c.Clientset.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	require.NoError(t, err)
	running := waitPod(t, c, ns, "web", 2*time.Minute, corev1.PodRunning)
	assert.True(t, strings.HasPrefix(running.Status.PodIP, "10.244.0."), "pod IP %q is on the pod bridge", running.Status.PodIP)

	// Python, because busybox's own TLS offers none of the API server's
	// cipher suites. The API server's certificate is checked against the
	// service account's CA bundle, under the name pods use.
	client := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "client"},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "client", Image: c.Images.Python,
				Command: []string{"sh", "-c", `for i in $(seq 30); do timeout 3 wget -q -O - http://web/ && break; sleep 1; done
python3 - <<'EOF'
import ssl, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount/"
ctx = ssl.create_default_context(cafile=sa + "ca.crt")
req = urllib.request.Request("https://kubernetes.default.svc/api", headers={"Authorization": "Bearer " + open(sa + "token").read()})
with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
    print("api-reachable", r.status, flush=True)
EOF`},
			}},
		},
	}
	_, err = pods.Create(ctx, client, metav1.CreateOptions{})
	require.NoError(t, err)
	done := waitPod(t, c, ns, "client", 2*time.Minute, corev1.PodSucceeded, corev1.PodFailed)
	logs := podLogs(t, c, ns, "client")
	assert.Equal(t, corev1.PodSucceeded, done.Status.Phase, logs)
	assert.Contains(t, logs, "hello-from-web", "the Service name resolved and the VIP reached the pod")
	assert.Contains(t, logs, "api-reachable", "the pod reached the API server through the kubernetes Service")
}
