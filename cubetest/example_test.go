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
	cluster := cubetest.NewCluster(nil, cube.WithNamespace("team-a"))
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
