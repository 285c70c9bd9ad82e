package cubetest_test

// These tests hold cubetest's admission to the real kube-apiserver's
// (internal/testsupport/testenv): the same request gets the same error
// class and message from both.

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/serve"
)

// sameError checks that the real server and cubetest answered alike.
func sameError(t *testing.T, real, fake error, class func(error) bool) {
	t.Helper()
	require.Error(t, real, "the API server refuses")
	require.Error(t, fake, "cubetest refuses")
	assert.True(t, class(real), "%v", real)
	assert.True(t, class(fake), "%v", fake)
	assert.Equal(t, real.Error(), fake.Error())
}

func TestAdmissionAsTheAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()

	t.Run("namespace not found", func(t *testing.T) {
		ns := env.Namespace(t)
		missing := ns + "-missing"
		w := serve.VLLM("chat", "Qwen/Qwen2.5-7B-Instruct").Namespace(missing).On(hardware.H100).Accelerators(1)
		_, real := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset)).Apply(ctx, w)
		_, fake := cubetest.NewCluster(nil, cube.Namespace(ns)).Client.Apply(ctx, w)
		sameError(t, real, fake, apierrors.IsNotFound)
		assert.Contains(t, fake.Error(), `namespaces "`+missing+`" not found`)

		pod := gpuPod("p", missing, "1")
		real = env.Client.Create(ctx, pod.DeepCopy())
		fake = cubetest.NewCluster(nil).Fake.Create(ctx, pod.DeepCopy())
		sameError(t, real, fake, apierrors.IsNotFound)
	})

	t.Run("quota, LimitRange and Pod Security", func(t *testing.T) {
		ns := env.Namespace(t)
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "gpus", Namespace: ns},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("8")}},
		}
		limits := &corev1.LimitRange{
			ObjectMeta: metav1.ObjectMeta{Name: "bounds", Namespace: ns},
			Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
				Type: corev1.LimitTypeContainer,
				Max:  corev1.ResourceList{"cpu": resource.MustParse("2")},
			}}},
		}
		fakeCluster := cubetest.NewCluster(nil, cube.Namespace(ns))
		for _, c := range []client.Client{env.Client, fakeCluster.Fake} {
			require.NoError(t, c.Create(ctx, quota.DeepCopy()))
			require.NoError(t, c.Create(ctx, limits.DeepCopy()))
			nsObj := &corev1.Namespace{}
			require.NoError(t, c.Get(ctx, client.ObjectKey{Name: ns}, nsObj))
			if nsObj.Labels == nil {
				nsObj.Labels = map[string]string{}
			}
			nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
			require.NoError(t, c.Update(ctx, nsObj))
		}
		// No quota controller runs on the test API server: write what it
		// writes once it has counted the quota (status.hard, nothing used).
		counted := quota.DeepCopy()
		require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(counted), counted))
		counted.Status = corev1.ResourceQuotaStatus{Hard: quota.Spec.Hard, Used: corev1.ResourceList{"requests.nvidia.com/gpu": resource.MustParse("0")}}
		require.NoError(t, env.Client.Status().Update(ctx, counted))
		// The server's quota admission reads quotas through an informer:
		// wait until it has seen the counted status (a dry run over the
		// limit is refused; a dry run charges nothing), or the first pod
		// below could be admitted uncharged.
		require.Eventually(t, func() bool {
			err := env.Client.Create(ctx, gpuPod("probe", ns, "9"), client.DryRunAll)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota")
		}, 30*time.Second, 50*time.Millisecond, "the API server enforces the counted quota")

		both := func(pod *corev1.Pod) (real, fake error) {
			return env.Client.Create(ctx, pod.DeepCopy()), fakeCluster.Fake.Create(ctx, pod.DeepCopy())
		}
		real, fake := both(gpuPod("six", ns, "6"))
		require.NoError(t, real)
		require.NoError(t, fake)
		real, fake = both(gpuPod("three", ns, "3"))
		sameError(t, real, fake, apierrors.IsForbidden)
		assert.Equal(t, cubetest.QuotaExceededMessage("three", "gpus", "requests.nvidia.com/gpu", "3", "6", "8"), fake.Error())

		big := gpuPod("big", ns, "1")
		big.Spec.Containers[0].Resources.Limits["cpu"] = resource.MustParse("4")
		real, fake = both(big)
		sameError(t, real, fake, apierrors.IsForbidden)

		privileged := gpuPod("privileged", ns, "1")
		yes := true
		privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &yes}
		real, fake = both(privileged)
		sameError(t, real, fake, apierrors.IsForbidden)
	})
}
