package cubetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// applyWaitReact is what a user's automation does with any builder: apply,
// wait, and react to the outcome (here: report it, delete a failure).
func applyWaitReact(ctx context.Context, c *cube.Client, w cube.Workload, until cube.Phase) (string, error) {
	rel, err := c.Apply(ctx, w)
	if err != nil {
		return "", err
	}
	st, err := rel.Wait(ctx, until, cube.Timeout(5*time.Second), cube.FailOnStuckPods())
	switch {
	case errors.Is(err, cube.ErrFailed):
		return "failed: " + st.Reason, rel.Delete(ctx)
	case err != nil:
		return "", err
	}
	return string(st.Phase), nil
}

// TestEveryBuilderAppliesWaitsAndReacts applies one workload of every
// builder package to the in-memory cluster, plays its controller to success
// and to failure, and checks that the user's code saw each outcome, in well
// under a second each.
func TestEveryBuilderAppliesWaitsAndReacts(t *testing.T) {
	const ns = "team-a"
	cases := []struct {
		name    string
		release string
		build   func() cube.Workload
		until   cube.Phase
		want    cube.Phase // the phase Wait returns on success
	}{
		{"tenant", ns, func() cube.Workload {
			return cube.Tenant(ns).CPU("64").Memory("256Gi").GPUs("nvidia.com/gpu", 8).Editors("alice").Viewers("bob")
		}, cube.Ready, cube.Ready},
		{"notebook", "alice-lab", func() cube.Workload {
			return notebook.Jupyter("alice-lab", "alice").Namespace(ns).AuthSecret("alice-lab-token", "token").Storage("10Gi", "").AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"})
		}, cube.Ready, cube.Ready},
		{"pytorchjob", "mnist", func() cube.Workload {
			return train.PyTorch("mnist").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("mnist.py").On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded},
		{"rayjob", "tune", func() cube.Workload {
			return train.Ray("tune").Namespace(ns).Image("rayproject/ray:2.40.0").Entrypoint("python tune.py").WorkerGroup("workers", 2).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded},
		{"volcanojob", "hostfile", func() cube.Workload {
			return train.Volcano("hostfile").Namespace(ns).Image("busybox:1.36").Command("true").Task("worker", 2)
		}, cube.Succeeded, cube.Succeeded},
		{"vllm", "qwen", func() cube.Workload {
			return serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).GPUs(1).Replicas(2)
		}, cube.Ready, cube.Ready},
		{"vllm multi-node", "deepseek", func() cube.Workload {
			return serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").Namespace(ns).On(hardware.H100).GPUs(8).Nodes(2)
		}, cube.Ready, cube.Ready},
		{"katib experiment", "search", func() cube.Workload {
			trial := train.PyTorch("search").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return tune.New("search").Namespace(ns).Objective(tune.Maximize("accuracy")).Algorithm(tune.Random()).
				Param(tune.Float("lr", 1e-4, 1e-1)).Trial(trial, tune.Arg("lr", "--lr")).MaxTrials(4)
		}, cube.Succeeded, cube.Succeeded},
		{"llm sft", "support-bot", func() cube.Workload {
			sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(llm.InstructionData("support", "pvc://datasets/support.json", llm.Alpaca)).
				LoRA(llm.Adapter{Rank: 16, Alpha: 32}).Output("pvc://models/support-bot")
			sft.Job().Namespace(ns).On(hardware.H100).GPUs(8)
			return sft
		}, cube.Succeeded, cube.Succeeded},
		{"pipeline", "flow", func() cube.Workload {
			prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			job := train.PyTorch("flow-train").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return pipeline.New("flow").Namespace(ns).Step(prepare, pipeline.Workload("train", job).After(prepare))
		}, cube.Succeeded, cube.Succeeded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outcomes := []cube.Phase{cube.Succeeded, cube.Failed}
			if tc.name == "tenant" {
				outcomes = outcomes[:1] // nothing in a tenant has a controller to fail it
			}
			for _, outcome := range outcomes {
				ctx := t.Context()
				cluster := cubetest.NewCluster(nil, cube.WithNamespace(ns))
				start := time.Now()
				done := make(chan struct{})
				var got string
				var err error
				go func() {
					defer close(done)
					got, err = applyWaitReact(ctx, cluster.Client, tc.build(), tc.until)
				}()
				// The automation may fail before it records anything: stop
				// looking for the release then.
				found, cancel := context.WithTimeout(ctx, 2*time.Second)
				go func() { <-done; cancel() }()
				rel, werr := cluster.WaitForRelease(found, ns, tc.release)
				if werr != nil {
					<-done
					require.NoError(t, err, "apply, wait and react")
					require.NoError(t, werr)
				}
				if outcome == cube.Failed {
					require.NoError(t, cluster.MarkFailed(ctx, rel, "Boom", "the controller gave up"))
					// A StatefulSet never fails by itself: a crashing pod is
					// what the automation reacts to.
					require.NoError(t, cluster.AddPod(ctx, rel, tc.release+"-crashing", "CrashLoopBackOff", "the controller gave up"))
				} else {
					require.NoError(t, cluster.MarkSucceeded(ctx, rel))
				}
				<-done
				require.NoError(t, err)
				if outcome == cube.Failed {
					assert.Contains(t, got, "failed: ")
					assert.Contains(t, got, "the controller gave up")
					rels, lerr := cluster.Client.Releases(ctx, "")
					require.NoError(t, lerr)
					assert.Empty(t, rels, "the automation deleted the failed release")
				} else {
					assert.Equal(t, string(tc.want), got)
				}
				assert.Less(t, time.Since(start), time.Second, "apply, wait and react take well under a second in memory")
			}
		})
	}
}
