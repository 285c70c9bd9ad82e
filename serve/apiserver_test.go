package serve_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/serve"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestGoldenCasesApplyStrict applies every golden setup to a real API
// server with strict field validation (the LeaderWorkerSet and HTTPRoute
// CRDs included): a field the schema does not know, or a value the API
// server's validation refuses, fails. Applying twice changes nothing.
func TestGoldenCasesApplyStrict(t *testing.T) {
	env := testenv.Get(t)
	// One namespace for all: the releases have distinct names, and each
	// namespace costs a sweep of every resource type when it is deleted.
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, c := range goldenCases() {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			rel, err := cl.Apply(ctx, c.w)
			require.NoError(t, err)
			want, err := c.w.Objects()
			require.NoError(t, err)
			require.Len(t, rel.Objects, len(want))
			versions := map[cube.ObjectRef]string{}
			for _, ref := range rel.Objects {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(ref.GroupVersionKind)
				require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u), ref.String())
				assert.Equal(t, ns, u.GetNamespace())
				versions[ref] = u.GetResourceVersion()
			}

			_, err = cl.Apply(ctx, c.w)
			require.NoError(t, err)
			for _, ref := range rel.Objects {
				u := &unstructured.Unstructured{}
				u.SetGroupVersionKind(ref.GroupVersionKind)
				require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u))
				assert.Equal(t, versions[ref], u.GetResourceVersion(), "a second apply of %s changed it", ref)
			}
		})
	}
}

// TestStoredObjectsKeepTheirFields reads back what the API server stored for
// a multi-node vLLM service and a canary and checks the fields that matter.
func TestStoredObjectsKeepTheirFields(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))

	svc := serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").On(hardware.H100).
		Auto(serve.ContextLength(32768)).Autoscale(1, 3, serve.ScaleOnQueue("5"))
	_, err := cl.Apply(ctx, svc)
	require.NoError(t, err)
	lws := &lwsv1.LeaderWorkerSet{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deepseek"}, lws))
	assert.Equal(t, int32(2), *lws.Spec.LeaderWorkerTemplate.Size)
	// The CRD defaults the replicas; cube never sends them, so the
	// autoscaler's changes survive the next apply.
	assert.Equal(t, int32(1), *lws.Spec.Replicas)
	applied := false
	for _, mf := range lws.ManagedFields {
		if mf.Manager == cube.DefaultFieldOwner+":"+ns+"/deepseek" { // the release's field manager
			applied = true
			require.NotNil(t, mf.FieldsV1)
			assert.NotContains(t, string(mf.FieldsV1.Raw), `"f:replicas"`)
		}
	}
	assert.True(t, applied, "the release's field manager owns fields of the set: %v", lws.ManagedFields)
	assert.Equal(t, lwsv1.LeaderCreatedStartupPolicy, lws.Spec.StartupPolicy)
	leader := lws.Spec.LeaderWorkerTemplate.LeaderTemplate.Spec.Containers[0]
	assert.Contains(t, leader.Args, "--pipeline-parallel-size")
	gpus := leader.Resources.Limits["nvidia.com/gpu"]
	assert.Equal(t, int64(8), gpus.Value())
	worker := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[0]
	assert.Contains(t, worker.Command[2], `until ray start --address="$LWS_LEADER_ADDRESS:6379" --block`)

	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "deepseek"}, hpa))
	assert.Equal(t, "LeaderWorkerSet", hpa.Spec.ScaleTargetRef.Kind)
	require.Len(t, hpa.Spec.Metrics, 1)
	assert.Equal(t, "vllm:num_requests_waiting", hpa.Spec.Metrics[0].Pods.Metric.Name)

	split := serve.Canary("chat", serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct"), serve.VLLM("chat-v2", "Qwen/Qwen2.5-7B-Instruct")).
		Weights(80, 20).Gateway("inference", "")
	_, err = cl.Apply(ctx, split)
	require.NoError(t, err)
	route := &gatewayv1.HTTPRoute{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "chat"}, route))
	refs := route.Spec.Rules[0].BackendRefs
	require.Len(t, refs, 2)
	assert.Equal(t, gatewayv1.ObjectName("chat-v1-api"), refs[0].Name)
	assert.Equal(t, int32(80), *refs[0].Weight)
	assert.Equal(t, gatewayv1.ObjectName("chat-v2-api"), refs[1].Name)
	assert.Equal(t, int32(20), *refs[1].Weight)
	assert.Equal(t, gatewayv1.PortNumber(8000), *refs[1].Port)
}

// markAll writes, through the status subresource, what each object's
// controller writes at phase.
func markAll(t *testing.T, c client.Client, rel *cube.Release, phase cube.Phase, reason, message string) {
	t.Helper()
	for _, ref := range rel.Objects {
		if cubetest.HasStatus(ref.GroupKind()) {
			require.NoError(t, cubetest.MarkObject(t.Context(), c, ref, phase, reason, message))
		}
	}
}

type waitResult struct {
	st  cube.Status
	err error
}

func waitInBackground(t *testing.T, rel *cube.Release, until cube.Phase) <-chan waitResult {
	out := make(chan waitResult, 1)
	go func() {
		st, err := rel.Wait(t.Context(), until, cube.Timeout(30*time.Second))
		out <- waitResult{st, err}
	}()
	return out
}

// TestWaitReadyDeployment waits through Ready for a Deployment-based service
// whose Deployment the test moves to available the way the Deployment
// controller does.
func TestWaitReadyDeployment(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))
	svc := serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").On(hardware.H100).Accelerators(1).Replicas(2)
	rel, err := cl.Apply(t.Context(), svc)
	require.NoError(t, err)

	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase, "nothing has rolled out yet")

	done := waitInBackground(t, rel, cube.Ready)
	markAll(t, env.Client, rel, cube.Ready, "", "")
	res := <-done
	require.NoError(t, res.err)
	assert.Equal(t, cube.Ready, res.st.Phase)

	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "qwen"}, dep))
	assert.Equal(t, int32(2), dep.Status.AvailableReplicas)
}

// TestWaitReadyLeaderWorkerSet waits through Ready for a multi-node service:
// the LeaderWorkerSet reader of serve.Kinds follows the Available condition.
func TestWaitReadyLeaderWorkerSet(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(serve.Kinds()...))
	svc := serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").On(hardware.H100).Auto(serve.ContextLength(8192))
	rel, err := cl.Apply(t.Context(), svc)
	require.NoError(t, err)
	require.Contains(t, refKinds(rel), "LeaderWorkerSet")

	markAll(t, env.Client, rel, cube.InProgress, "", "")
	st, err := rel.Status(t.Context())
	require.NoError(t, err)
	assert.Equal(t, cube.InProgress, st.Phase)

	done := waitInBackground(t, rel, cube.Ready)
	markAll(t, env.Client, rel, cube.Ready, "AllGroupsReady", "All replicas are ready")
	res := <-done
	require.NoError(t, res.err)
	assert.Equal(t, cube.Ready, res.st.Phase)
	for _, o := range res.st.Objects {
		if o.Ref.Kind == "LeaderWorkerSet" {
			assert.Equal(t, "AllGroupsReady", o.Reason)
			assert.Equal(t, "1/1 groups ready, 1/1 updated", o.Message)
		}
	}
}

// TestWaitFailedLeaderWorkerSet: a set cubetest marks failed ends the wait
// with cube.ErrFailed.
func TestWaitFailedLeaderWorkerSet(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(serve.Kinds()...))
	svc := serve.SGLang("qwen-72b", "pvc://models/qwen-72b").On(hardware.H100).Accelerators(8).Nodes(2)
	rel, err := cl.Apply(t.Context(), svc)
	require.NoError(t, err)

	done := waitInBackground(t, rel, cube.Ready)
	markAll(t, env.Client, rel, cube.Failed, "GroupCrashed", "leader exited")
	res := <-done
	require.Error(t, res.err)
	assert.True(t, errors.Is(res.err, cube.ErrFailed), res.err.Error())
	assert.Equal(t, cube.Failed, res.st.Phase)
	assert.Contains(t, res.st.Reason, "GroupCrashed")
}

func refKinds(rel *cube.Release) []string {
	var out []string
	for _, r := range rel.Objects {
		out = append(out, r.Kind)
	}
	return out
}

// TestTritonGeneratedRepositoryApplyStrict applies the generated-repository
// services to the real API server with strict field validation and reads
// back the ConfigMap and the volume items that lay the repository out.
func TestTritonGeneratedRepositoryApplyStrict(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cl := cube.NewFromClient(env.Client, cube.Namespace(ns))

	for _, w := range []cube.Workload{tritonVLLMService(), tritonPythonService()} {
		rel, err := cl.Apply(ctx, w)
		require.NoError(t, err)
		want, err := w.Objects()
		require.NoError(t, err)
		require.Len(t, rel.Objects, len(want))
	}

	cm := &corev1.ConfigMap{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton-config"}, cm))
	assert.Contains(t, cm.Data["qwen.config.pbtxt"], "kind: KIND_MODEL")
	assert.Contains(t, cm.Data["qwen.1.model.json"], `"model": "Qwen/Qwen2.5-7B-Instruct"`)

	dep := &appsv1.Deployment{}
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton"}, dep))
	var items []corev1.KeyToPath
	for _, v := range dep.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil && v.ConfigMap.Name == "qwen-triton-config" {
			items = v.ConfigMap.Items
		}
	}
	assert.Equal(t, []corev1.KeyToPath{
		{Key: "qwen.config.pbtxt", Path: "qwen/config.pbtxt"},
		{Key: "qwen.1.model.json", Path: "qwen/1/model.json"},
	}, items)
	for _, e := range dep.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "HF_TOKEN" {
			assert.Empty(t, e.Value, "the token is never a literal")
			require.NotNil(t, e.ValueFrom)
			assert.Equal(t, "hf-token", e.ValueFrom.SecretKeyRef.Name)
		}
	}

	// A second apply of the same objects changes nothing.
	before := cm.ResourceVersion
	_, err := cl.Apply(ctx, tritonVLLMService())
	require.NoError(t, err)
	require.NoError(t, env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-triton-config"}, cm))
	assert.Equal(t, before, cm.ResourceVersion)
}
