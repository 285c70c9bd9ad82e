package main

// The quickstart's -apply journey against a real kube-apiserver and etcd
// (internal/testsupport/testenv) with the CRDs of training-operator, Argo and Volcano
// installed and strict field validation. No controllers run there: the test
// plays them, writing each object's status as its controller would once
// the object exists.

import (
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestQuickstartAppliesToAnAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	// The tenant creates its own namespace (and a Volcano queue of the
	// same name); a fresh name keeps runs apart.
	ns := "team-" + strings.ToLower(rand.Text()[:8])
	t.Cleanup(func() {
		bg := context.Background()
		for _, obj := range []client.Object{
			&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
			&vcscheduling.Queue{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		} {
			if err := env.Client.Delete(bg, obj); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("delete %T %s: %v", obj, ns, err)
			}
		}
	})
	workloads, err := journey(ctx, io.Discard, ns, gpuCluster())
	require.NoError(t, err)
	c := cube.NewFromClient(env.Client, clientOptions(ns, gpuCluster())...)

	// The controllers: each object that has a status is marked done once.
	// Their calls use the test's context, so that stopping them never
	// interrupts a status write the wait has already seen.
	player, stop := context.WithCancel(ctx)
	var played sync.WaitGroup
	marked := map[cube.ObjectRef]bool{}
	played.Go(func() {
		for player.Err() == nil {
			rels, _ := c.Releases(ctx, ns)
			for _, rel := range rels {
				for _, ref := range rel.Objects {
					if marked[ref] || !cubetest.HasStatus(ref.GroupKind()) {
						continue
					}
					if cubetest.MarkObject(ctx, env.Client, ref, cube.Succeeded, "", "") == nil {
						marked[ref] = true
					}
				}
			}
			select {
			case <-player.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	})

	var logs []string
	err = applyAll(ctx, c, time.Minute, workloads, func(format string, args ...any) {
		logs = append(logs, fmt.Sprintf(format, args...))
	})
	stop()
	played.Wait()
	require.NoError(t, err, strings.Join(logs, "\n"))

	rels, err := c.Releases(ctx, ns)
	require.NoError(t, err)
	names := make([]string, len(rels))
	applied := map[string]int{}
	for i, r := range rels {
		names[i] = r.Name
		for _, ref := range r.Objects {
			applied[ref.Kind]++
		}
	}
	// Each workload once: the tenant, the pipeline and the served model.
	// The PyTorchJob is the pipeline's training step, which Argo creates;
	// -apply does not apply it beside the pipeline.
	assert.ElementsMatch(t, []string{ns, "sft-flow", "qwen-chat"}, names)
	assert.Zero(t, applied["PyTorchJob"], "no PyTorchJob is applied beside the pipeline: %v", applied)
	assert.Equal(t, 1, applied["Workflow"], "%v", applied)
	assert.Equal(t, 1, applied["Deployment"], "%v", applied)
	var appliedLines []string
	for _, l := range logs {
		if strings.HasPrefix(l, "applied ") {
			appliedLines = append(appliedLines, l)
		}
	}
	assert.Len(t, appliedLines, 3, "one apply a workload: %v", logs)
	for _, want := range []string{
		"applied " + ns + "/" + ns + " (",
		"applied " + ns + "/sft-flow (",
		"applied " + ns + "/qwen-chat (",
		"sft-flow: Succeeded",
		"qwen-chat: Ready",
	} {
		assert.True(t, containsPrefix(logs, want), "%q in %v", want, logs)
	}
	assert.False(t, containsPrefix(logs, "llama-sft"), "the training job is no release of its own: %v", logs)
	// No controller runs here, so nothing but -apply created objects: the
	// API server holds no PyTorchJob and one Workflow.
	var jobs kubeflowv1.PyTorchJobList
	require.NoError(t, env.Client.List(ctx, &jobs, client.InNamespace(ns)))
	assert.Empty(t, jobs.Items)
	var flows wfv1.WorkflowList
	require.NoError(t, env.Client.List(ctx, &flows, client.InNamespace(ns)))
	require.Len(t, flows.Items, 1)
	assert.Equal(t, "sft-flow", flows.Items[0].Name)
	kinds := map[string]bool{}
	for ref := range marked {
		kinds[ref.Kind] = true
	}
	for _, k := range []string{"Workflow", "Deployment", "Service"} {
		assert.True(t, kinds[k], "the %s was applied and driven to done: %v\n%s", k, marked, strings.Join(logs, "\n"))
	}
}

func containsPrefix(lines []string, prefix string) bool {
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}
