package pods

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

// problemsOf returns the pod problems of the last status a failed wait saw.
func problemsOf(t *testing.T, err error) []cube.PodProblem {
	t.Helper()
	var we *cube.WaitError
	require.True(t, errors.As(err, &we), "a wait error: %v", err)
	return we.Last.Pods
}

func reasons(problems []cube.PodProblem) []string {
	var out []string
	for _, p := range problems {
		out = append(out, p.Reason)
	}
	return out
}

// What a real kubelet and scheduler report about pods that cannot start
// reaches Status and Wait as cube promises: an image that is not on the node
// and cannot be pulled (no registry is reachable here), a pod that asks for
// an accelerator the node does not have, and a container that keeps
// crashing.
func TestStuckPods(t *testing.T) {
	t.Run("missing image", func(t *testing.T) {
		_, cl, _ := journeys.NewClient(t)
		svc := serve.VLLM("absent", "standin/none").Image("cube.test/not-built:1").CPU("100m").Memory("64Mi")
		rel := journeys.Apply(t, cl, svc)
		_, err := rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods())
		require.Error(t, err)
		problems := problemsOf(t, err)
		require.NotEmpty(t, problems)
		assert.Equal(t, "ImagePullBackOff", problems[0].Reason, "%v", problems)
		assert.True(t, problems[0].Stuck)
		assert.Contains(t, problems[0].Message, "cube.test/not-built:1")
	})
	t.Run("accelerator the node lacks", func(t *testing.T) {
		c, cl, _ := journeys.NewClient(t)
		job := train.PyTorch("wants-gpu").Image(c.Images.Python).Command("true").Workers(1).On(hardware.H100).Accelerators(1)
		rel := journeys.Apply(t, cl, job)
		// Unschedulable is not stuck (an autoscaler may add a node), so the
		// wait times out with the scheduler's reason in its last status.
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		defer cancel()
		var seen []cube.PodProblem
		_, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(45*time.Second), cube.OnProgress(func(s cube.Status) {
			if len(s.Pods) > 0 {
				seen = s.Pods
			}
		}))
		require.ErrorIs(t, err, cube.ErrTimeout)
		problems := problemsOf(t, err)
		if len(problems) == 0 {
			problems = seen
		}
		require.NotEmpty(t, problems)
		assert.Equal(t, "Unschedulable", problems[0].Reason)
		assert.False(t, problems[0].Stuck)
		assert.True(t, strings.Contains(problems[0].Message, "nvidia.com/gpu") || strings.Contains(problems[0].Message, "node affinity/selector"),
			"the scheduler says why: %s", problems[0].Message)
	})
	t.Run("crash loop", func(t *testing.T) {
		c, cl, _ := journeys.NewClient(t)
		svc := serve.VLLM("crashes", "standin/none").Image(c.Images.Busybox).Command("sh", "-c", "echo boom; exit 3").CPU("100m").Memory("64Mi")
		rel := journeys.Apply(t, cl, svc)
		_, err := rel.Wait(t.Context(), cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods())
		require.Error(t, err)
		problems := problemsOf(t, err)
		require.NotEmpty(t, problems)
		assert.Equal(t, "CrashLoopBackOff", problems[0].Reason, "%v", reasons(problems))
		assert.True(t, problems[0].Stuck)
		assert.Contains(t, problems[0].Message, "exit code 3")
		prev := journeys.LogsOf(t, rel, cube.LogOptions{Previous: true})
		assert.Contains(t, prev, "boom")
	})
}
