package cubetest_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
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
