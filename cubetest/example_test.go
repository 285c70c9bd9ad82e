package cubetest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/tenant"
)

// A user's automation reacts to a failed rollout; the test fails it on
// purpose, in memory.
func ExampleCluster_MarkFailed() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = cluster.MarkFailed(ctx, rel, "ProgressDeadlineExceeded", "image pull failed")
	st, err := rel.Wait(ctx, cube.Ready)
	fmt.Println(errors.Is(err, cube.ErrFailed))
	fmt.Println(st.Reason)
	// Output:
	// true
	// Deployment.apps team-a/shop Failed (ProgressDeadlineExceeded: image pull failed)
}

// A user's automation learns why its rollout does not start: the test
// plays the tenant's quota refusing its pods, as the ReplicaSet controller
// records it.
func ExampleCluster_RefusePods() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	refused := cubetest.QuotaExceededMessage("shop-6f7b9c4d8-x2x9z", "team-a", "requests.nvidia.com/gpu", "2", "0", "1")
	if err := cluster.RefusePods(ctx, rel, refused); err != nil {
		fmt.Println(err)
		return
	}
	st, err := rel.Wait(ctx, cube.Ready, cube.FailOnStuckPods)
	fmt.Println(errors.Is(err, cube.ErrFailed))
	fmt.Println(st.Reason)
	q := st.Refusals[0].Quota
	fmt.Println(q.Quota, q.Requested, q.Limited)
	// Output:
	// true
	// Deployment.apps team-a/shop: pods refused: exceeded quota team-a: requested requests.nvidia.com/gpu=2, used requests.nvidia.com/gpu=0, limited to requests.nvidia.com/gpu=1
	// team-a requests.nvidia.com/gpu=2 requests.nvidia.com/gpu=1
}

// A user's test says what the controllers do, then runs the automation
// under test in one goroutine: apply, wait, report.
func ExampleCluster_React() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	_ = cluster.React(cubetest.Kind("Deployment"), cubetest.After(30*time.Second, cubetest.Ready()))
	_ = cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(2*time.Hour, cubetest.FailWith("OOMKilled", "worker 3 ran out of memory")))

	rel, err := cluster.Client.Apply(ctx, webApp("shop", 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := rel.Wait(ctx, cube.Ready)
	fmt.Println(st.Phase, err)

	ft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-bot")
	ft.Job().On(hardware.H100).Accelerators(8)
	rel, err = cluster.Client.Apply(ctx, ft)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err = rel.Wait(ctx, cube.Succeeded)
	fmt.Println(errors.Is(err, cube.ErrFailed))
	fmt.Println(st.Reason)
	// Output:
	// Ready <nil>
	// true
	// PyTorchJob.kubeflow.org team-a/support-bot Failed (OOMKilled: worker 3 ran out of memory)
}

// A portal's "quota exceeded" path: a 16-GPU fine-tune in a tenant of
// 8 GPUs is stored, as on a cluster, and its worker's pod is refused by
// the quota; the release says so, with what the quota admission said.
func Example_quotaExceeded() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	if _, err := cluster.Client.Apply(ctx, tenant.New("team-a").Accelerators(hardware.H100, 8)); err != nil {
		fmt.Println(err)
		return
	}
	_ = cluster.React(cubetest.Kind("PyTorchJob"), cubetest.Succeed()) // it would, could it run

	ft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
		Output("pvc://models/support-bot")
	ft.Job().On(hardware.H100).Accelerators(8).Nodes(2)
	rel, err := cluster.Client.Apply(ctx, ft)
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods)
	fmt.Println(errors.Is(err, cube.ErrFailed))
	q := st.Refusals[0].Quota
	fmt.Println(q.Quota, q.Requested, q.Used, q.Limited)
	fmt.Println(cluster.MarkSucceeded(ctx, rel) != nil)
	// Output:
	// true
	// team-a requests.nvidia.com/gpu=8 requests.nvidia.com/gpu=8 requests.nvidia.com/gpu=8
	// true
}
