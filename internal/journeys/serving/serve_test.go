package serving

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/serve"
)

// These journeys serve with the stand-in engine
// (internal/testsupport/testenv/cmd/standin-engine), which stands in for vLLM: no model
// can run here. It takes the command line cube renders for vLLM (vllm
// serve MODEL --port ...) and, across nodes, the Ray start commands, and
// answers on the OpenAI API.

// serviceClient returns a inference.Client for the Kubernetes Service of the
// release that exposes the engine's port, reached through its cluster IP
// (kube-proxy's rules apply on this host too).
// apiPort is the port of svc's HTTP API, read from its in-cluster URL.
func apiPort(t *testing.T, svc *serve.Service) int32 {
	t.Helper()
	raw, err := serve.URL(svc)
	require.NoError(t, err)
	u, err := url.Parse(raw)
	require.NoError(t, err)
	port, err := strconv.ParseInt(u.Port(), 10, 32)
	require.NoError(t, err)
	return int32(port)
}

func serviceClient(t *testing.T, cl *cube.Client, rel *cube.Release, ns string, port int32, clientset interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Service, error)
}) *inference.Client {
	t.Helper()
	for _, ref := range rel.Objects {
		if ref.Kind != "Service" || ref.Group != "" {
			continue
		}
		svc, err := clientset.Get(t.Context(), ref.Name, metav1.GetOptions{})
		require.NoError(t, err)
		if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
			continue
		}
		for _, p := range svc.Spec.Ports {
			if p.Port == port {
				endpoint := fmt.Sprintf("http://%s", net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(port))))
				c, err := inference.NewClient(endpoint, inference.RequestTimeout(10*time.Second))
				require.NoError(t, err)
				return c
			}
		}
	}
	t.Fatalf("release %s has no Service with a cluster IP on port %d: %v", rel.Name, port, rel.Objects)
	return nil
}

// chat asks until the Service answers (endpoints reach kube-proxy a moment
// after the pods are ready).
func chat(t *testing.T, c *inference.Client, question string) string {
	t.Helper()
	var answer string
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := c.Chat(ctx, inference.UserMessage(question))
		if err != nil {
			t.Logf("chat: %v", err)
			return false, nil
		}
		if len(resp.Choices) > 0 {
			answer = resp.Choices[0].Message.Content
		}
		return true, nil
	})
	require.NoError(t, err)
	return answer
}

// A single-node service autoscaled from two replicas becomes Ready with its
// PodDisruptionBudget and HorizontalPodAutoscaler in place, and answers
// through its Service.
func TestServeSingleNode(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	svc := serve.VLLM("chat", "standin/echo-7b").
		Image(c.Images.Standin).
		CPU("100m").Memory("128Mi").
		Autoscale(2, 4, serve.ScaleOnCPU(80))
	rel := journeys.Apply(t, cl, svc)
	st, err := rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	require.NoError(t, err, journeys.LogsOf(t, rel))
	assert.Equal(t, cube.Ready, st.Phase)

	kinds := map[string]bool{}
	for _, ref := range rel.Objects {
		kinds[ref.Kind] = true
	}
	assert.True(t, kinds["PodDisruptionBudget"], "objects: %v", rel.Objects)
	assert.True(t, kinds["HorizontalPodAutoscaler"], "objects: %v", rel.Objects)
	pdbs, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	require.Len(t, pdbs.Items, 1)
	// The disruption controller counts the pods the budget selects.
	err = wait.PollUntilContextTimeout(t.Context(), 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		pdb, err := c.Clientset.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, pdbs.Items[0].Name, metav1.GetOptions{})
		return err == nil && pdb.Status.ExpectedPods == 2 && pdb.Status.CurrentHealthy == 2, nil
	})
	require.NoError(t, err, "the PodDisruptionBudget selects the two serving pods")

	client := serviceClient(t, cl, rel, ns, apiPort(t, svc), c.Clientset.CoreV1().Services(ns))
	assert.Equal(t, "standin: what is cube?", chat(t, client, "what is cube?"))
}

// A two-pod serving group on LeaderWorkerSet: the LWS controller's webhook
// gives the worker LWS_LEADER_ADDRESS, the worker resolves it through
// cluster DNS and joins the leader's Ray head, the leader serves once the
// group is whole, and the answer comes through the Service.
func TestServeMultiNodeOnLeaderWorkerSet(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	// One T4 per pod: the test node advertises GPUs it does not have
	// (testenv.GPUs), so the group is scheduled as on GPU nodes.
	svc := serve.VLLM("big", "standin/echo-70b").
		Image(c.Images.Standin).
		CPU("100m").Memory("128Mi").
		On(hardware.T4).Accelerators(1).
		Nodes(2)
	rel := journeys.Apply(t, cl, svc)
	st, err := rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	logs := journeys.LogsOf(t, rel)
	require.NoError(t, err, logs)
	assert.Equal(t, cube.Ready, st.Phase)
	assert.Contains(t, logs, "resolved big-0.big."+ns, "the worker resolved LWS_LEADER_ADDRESS through cluster DNS:\n%s", logs)
	assert.Contains(t, logs, "joined the head")

	client := serviceClient(t, cl, rel, ns, apiPort(t, svc), c.Clientset.CoreV1().Services(ns))
	assert.Equal(t, "standin: across two pods", chat(t, client, "across two pods"))
}

// An embedding model on Text Embeddings Inference (the stand-in engine
// takes TEI's router arguments through its image's entrypoint, as TEI's
// images do: serve renders no command for TEI) becomes Ready on its
// /health probe and answers /v1/embeddings through its Service, as rag's
// OpenAI embedder calls it.
func TestServeEmbeddingsOnTEI(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	svc := serve.TEI("emb", "BAAI/bge-m3").Image(c.Images.Standin).CPU("100m").Memory("128Mi")
	rel := journeys.Apply(t, cl, svc)
	_, err := rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	require.NoError(t, err, journeys.LogsOf(t, rel))
	client := serviceClient(t, cl, rel, ns, apiPort(t, svc), c.Clientset.CoreV1().Services(ns))
	var resp openai.EmbeddingResponse
	err = wait.PollUntilContextTimeout(t.Context(), time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		r, err := client.CreateEmbeddings(ctx, openai.EmbeddingRequestStrings{Input: []string{"a", "b"}, Model: "BAAI/bge-m3"})
		if err != nil {
			t.Logf("embeddings: %v", err)
			return false, nil
		}
		resp = r
		return true, nil
	})
	require.NoError(t, err)
	require.Len(t, resp.Data, 2)
	assert.NotEmpty(t, resp.Data[0].Embedding)
}
