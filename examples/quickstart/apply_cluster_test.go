package main

// The quickstart's -apply journey on the one-node test cluster
// (internal/testsupport/testenv.GetCluster), where the training-operator, Argo, the
// kubelet, kube-proxy and CoreDNS run for real. The journey runs as -small
// does (training on CPU without Volcano, whose scheduler cannot run here; a
// Qwen2.5-7B on the T4s the test node advertises) with the test
// cluster's images: torch on CPU for training and the pipeline's steps, and
// the stand-in engine (internal/testsupport/testenv/cmd/standin-engine) in place of
// vLLM, which cannot run here.

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestQuickstartRunsOnACluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ctx := t.Context()
	// The tenant takes over this namespace (server-side apply of its
	// Namespace); its Volcano queue is cluster-scoped and removed here.
	ns := c.Namespace(t)
	t.Cleanup(func() {
		q := &vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if err := c.Client.Delete(context.Background(), q); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete queue %s: %v", ns, err)
		}
	})
	// The Hugging Face token the training job and the server read: a Secret
	// the team creates; the journey only references it.
	_, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "hf-token"},
		StringData: map[string]string{"token": "hf_test_token_not_used_offline"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	size := sizing{small: true, trainImage: c.Images.Python, stepImage: c.Images.Python, serveImage: c.Images.Standin}
	var out strings.Builder
	workloads, err := journey(ctx, &out, ns, size)
	require.NoError(t, err)
	cl, err := cube.New(c.Config, clientOptions(ns, size)...)
	require.NoError(t, err)
	var logs []string
	err = applyAll(ctx, cl, 5*time.Minute, workloads, func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		logs = append(logs, line)
		t.Log(line)
	})
	require.NoError(t, err, strings.Join(logs, "\n"))
	for _, want := range []string{"sft-flow: Succeeded", "qwen-chat: Ready"} {
		assert.True(t, containsPrefix(logs, want), "%q in %v", want, logs)
	}

	rels, err := cl.Releases(ctx, ns)
	require.NoError(t, err)
	byName := map[string]*cube.Release{}
	for _, r := range rels {
		byName[r.Name] = r
	}
	assert.NotContains(t, byName, "llama-sft", "the training job runs inside the pipeline only")
	require.Contains(t, byName, "sft-flow")
	// The PyTorchJob Argo created carries the pipeline's release label, so
	// its pods' logs are the pipeline release's.
	flowLogs := readAll(t, byName["sft-flow"])
	assert.Contains(t, flowLogs, "rank 0/2 mean gradient 1.5", "the training step ran torch.distributed over two pods")
	assert.Contains(t, flowLogs, "evaluated 3 rows", "the pipeline passed prepare's output to evaluate")
}

func readAll(t *testing.T, rel *cube.Release) string {
	t.Helper()
	r, err := rel.Logs(t.Context())
	require.NoError(t, err)
	defer r.Close()
	data, err := io.ReadAll(r)
	require.NoError(t, err)
	return string(data)
}
