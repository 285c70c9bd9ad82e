package cubetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
)

// BenchmarkApplyWaitReact measures one test of "apply a fine-tune, wait
// until it succeeds" on a fresh cluster: with a reactor playing the
// training operator (cube), and the way tests did it before reactors, a
// goroutine running the code under test while the test waits for the
// release and marks it (baseline).
func BenchmarkApplyWaitReact(b *testing.B) {
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := context.Background()
			cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
			if err := cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(time.Hour, cubetest.Succeed())); err != nil {
				b.Fatal(err)
			}
			rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ctx := context.Background()
			cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
			done := make(chan error, 1)
			go func() {
				rel, err := cluster.Client.Apply(ctx, fineTune("ft", "team-a", 2))
				if err == nil {
					_, err = rel.Wait(ctx, cube.Succeeded, cube.Timeout(5*time.Second))
				}
				done <- err
			}()
			rel, err := cluster.WaitForRelease(ctx, "team-a", "ft")
			if err != nil {
				b.Fatal(err)
			}
			if err := cluster.MarkSucceeded(ctx, rel); err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
		}
	})
}
