package llm_test

// These tests run against a real kube-apiserver with the training-operator
// CRDs installed (internal/testsupport/testenv); no operator runs.

import (
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
)

// TestAppliedStrictly applies every builder on H100 with InfiniBand,
// Ascend 910B3 and CPU with server-side apply and strict field
// validation, and checks the server stored what was rendered.
func TestAppliedStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset))
	for _, b := range builders {
		for _, s := range setups {
			name := b.name + "-" + s.name
			t.Run(name, func(t *testing.T) {
				f := b.build(name)
				s.on(f)
				fuzzcorpus.Stored(t, c, env, ns, f)
			})
		}
		// The same fine-tune as a TrainJob, against the Trainer v2.3.0
		// CRD the test API server serves.
		name := b.name + "-trainer"
		t.Run(name, func(t *testing.T) {
			f := b.build(name).Runtime("torch-h100", train.FrameworkTorch)
			setups[0].on(f)
			fuzzcorpus.Stored(t, c, env, ns, f)
		})
	}
}
