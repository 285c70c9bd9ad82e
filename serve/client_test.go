package serve_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/serve/servetest"
)

// TestClientWaitsUntilReady: Client returns only once the release is
// Ready, names the model the engine serves and passes the caller's
// options; cubetest has no network, so the client is pointed at a
// servetest server with ClientAt.
func TestClientWaitsUntilReady(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	svc := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	rel, err := cluster.Client.Apply(ctx, svc)
	require.NoError(t, err)
	engine := servetest.New(qwen, servetest.APIKey("sk-a"), servetest.Answer(func(p string) string { return "hello " + p }))
	t.Cleanup(engine.Close)

	type result struct {
		c   *inference.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := serve.ClientAt(ctx, rel, svc, engine.URL, inference.APIKey("sk-a"))
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("returned before the release was Ready: %v", r.err)
	case <-time.After(200 * time.Millisecond):
	}
	require.NoError(t, cluster.MarkReady(ctx, rel))
	var r result
	select {
	case r = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("did not return once the release was Ready")
	}
	require.NoError(t, r.err)
	assert.Equal(t, qwen, r.c.Model(), "the served name vLLM gives a Hugging Face model")
	assert.Equal(t, engine.URL+"/v1", r.c.BaseURL())
	resp, err := r.c.Chat(ctx, inference.UserMessage("team"))
	require.NoError(t, err)
	assert.Equal(t, "hello team", resp.Choices[0].Message.Content)
	require.Len(t, engine.Requests(), 1, "no /v1/models lookup: the model name came from the service")
	assert.True(t, engine.Requests()[0].Authorized)

	// Without an endpoint: the in-cluster URL and an explicit served name.
	named := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1).ServedModelName("chat")
	c, err := serve.Client(ctx, rel, named)
	require.NoError(t, err, "the release is Ready already")
	assert.Equal(t, "http://qwen-chat-api.team-a:8000/v1", c.BaseURL())
	assert.Equal(t, "chat", c.Model())
}

func TestClientRefusals(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	svc := serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	rel, err := cluster.Client.Apply(ctx, svc)
	require.NoError(t, err)

	_, err = serve.Client(ctx, nil, svc)
	assert.ErrorContains(t, err, "serve client for qwen-chat: no release")
	_, err = serve.Client(ctx, rel, nil)
	require.Error(t, err)
	other := serve.VLLM("other", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	_, err = serve.Client(ctx, rel, other)
	assert.ErrorContains(t, err, `release team-a/qwen-chat is not this service's`)
	_, err = serve.Client(ctx, rel, serve.VLLM("qwen-chat", qwen).Namespace("team-b").On(hardware.H100).Accelerators(1))
	assert.ErrorContains(t, err, "release team-a/qwen-chat is in another namespace than the service (team-b)")
	_, err = serve.Client(ctx, rel, serve.VLLM("qwen-chat", qwen).Namespace("team-a").On(hardware.H100).Accelerators(-1))
	assert.ErrorContains(t, err, "accelerators", "the service's own problems")
	_, err = serve.Client(ctx, rel, serve.Triton("qwen-chat", "pvc://models/repo").Namespace("team-a").On(hardware.L4).Accelerators(1))
	assert.ErrorContains(t, err, "Triton serves the KServe v2 protocol")
	_, err = serve.Client(ctx, rel, svc, inference.APIKey(" "))
	assert.ErrorContains(t, err, "apiKey", "a bad option fails before the wait")

	require.NoError(t, cluster.MarkFailed(ctx, rel, "ProgressDeadlineExceeded", "image pull"))
	_, err = serve.Client(ctx, rel, svc)
	assert.True(t, errors.Is(err, cube.ErrFailed), "%v", err)

	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	fresh := serve.VLLM("slow", qwen).Namespace("team-a").On(hardware.H100).Accelerators(1)
	slow, err := cluster.Client.Apply(ctx, fresh)
	require.NoError(t, err)
	_, err = serve.Client(short, slow, fresh)
	require.Error(t, err, "never Ready: the context ends the wait")
}

func leaderWorkerSet(replicas int32, ready int32, conds ...metav1.Condition) *unstructured.Unstructured {
	l := &lwsv1.LeaderWorkerSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "leaderworkerset.x-k8s.io/v1", Kind: "LeaderWorkerSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "llm", Namespace: "ns", Generation: 2},
		Spec:       lwsv1.LeaderWorkerSetSpec{Replicas: ptr.To(replicas)},
		Status:     lwsv1.LeaderWorkerSetStatus{ReadyReplicas: ready, UpdatedReplicas: ready, Conditions: conds},
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(l)
	if err != nil {
		panic(err)
	}
	return &unstructured.Unstructured{Object: content}
}

func cond(typ lwsv1.LeaderWorkerSetConditionType, status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: string(typ), Status: status, Reason: reason, Message: msg}
}

// TestLeaderWorkerSetStatus reads the statuses the LWS controller (v0.8.0)
// writes: it sets one of Available, Progressing and UpdateInProgress true
// and flips the others false, without observedGeneration.
func TestLeaderWorkerSetStatus(t *testing.T) {
	cases := map[string]struct {
		obj  *unstructured.Unstructured
		want cube.ObjectStatus
	}{
		"new": {leaderWorkerSet(2, 0),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "0/2 groups ready, 0/2 updated"}},
		"progressing": {leaderWorkerSet(2, 1,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 1/2 groups ready, 1/2 updated"}},
		"available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionFalse, "GroupsProgressing", "Replicas are progressing"),
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.Ready, Reason: "AllGroupsReady", Message: "2/2 groups ready, 2/2 updated"}},
		"rolling update after available": {leaderWorkerSet(2, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "AllGroupsReady", "All replicas are ready"),
			cond(lwsv1.LeaderWorkerSetUpdateInProgress, metav1.ConditionTrue, "GroupsUpdating", "Rolling Upgrade is in progress"),
			cond(lwsv1.LeaderWorkerSetProgressing, metav1.ConditionTrue, "GroupsProgressing", "Replicas are progressing")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "GroupsProgressing", Message: "Replicas are progressing: 2/2 groups ready, 2/2 updated"}},
		"scaled up while available": {leaderWorkerSet(3, 2,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionTrue, "AllGroupsReady", "All replicas are ready")),
			cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "2/3 groups ready, 2/3 updated"}},
		"failed (cubetest)": {leaderWorkerSet(1, 0,
			cond(lwsv1.LeaderWorkerSetAvailable, metav1.ConditionFalse, "GroupCrashed", "leader exited")),
			cube.ObjectStatus{Phase: cube.Failed, Reason: "GroupCrashed", Message: "leader exited: 0/1 groups ready, 0/1 updated"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := cube.ReadStatus(c.obj, serve.Kinds()...)
			got.Ref = cube.ObjectRef{}
			assert.Equal(t, c.want, got)
		})
	}

	stale := leaderWorkerSet(1, 1, metav1.Condition{Type: "Available", Status: metav1.ConditionTrue, Reason: "AllGroupsReady", ObservedGeneration: 1})
	assert.Equal(t, cube.InProgress, cube.ReadStatus(stale, serve.Kinds()...).Phase, "a condition of an older generation")
}

// TestReaderReadsWhatCubetestWrites checks the reader against cubetest's
// writer for every phase.
func TestReaderReadsWhatCubetestWrites(t *testing.T) {
	for _, phase := range []cube.Phase{cube.InProgress, cube.Ready, cube.Failed} {
		u := leaderWorkerSet(2, 0)
		require.NoError(t, cubetest.SetStatus(u, phase, "", ""))
		assert.Equal(t, phase, cube.ReadStatus(u, serve.Kinds()...).Phase, "phase %s", phase)
		assert.Equal(t, cube.Unknown, cube.ReadStatus(u).Phase, "without serve.Kinds, phase %s", phase)
	}
}
