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
	for i, r := range rels {
		names[i] = r.Name
	}
	assert.ElementsMatch(t, []string{ns, "llama-sft", "sft-flow", "qwen-chat"}, names)
	for _, want := range []string{
		"applied " + ns + "/" + ns + " (",
		"llama-sft: Succeeded",
		"sft-flow: Succeeded",
		"qwen-chat: Ready",
	} {
		assert.True(t, containsPrefix(logs, want), "%q in %v", want, logs)
	}
	kinds := map[string]bool{}
	for ref := range marked {
		kinds[ref.Kind] = true
	}
	for _, k := range []string{"PyTorchJob", "Workflow", "Deployment", "Service"} {
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
