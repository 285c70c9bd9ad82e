package llm_test

import (
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/train"
)

// TestFuzzCorpusApplies runs the FuzzFineTune and FuzzRL corpora (seeds,
// saved inputs, and 300 fixed-seed programs each) and applies every
// workload Objects accepts to the API server with strict field validation,
// checking that every object is stored as rendered: what cube accepts, the
// server accepts.
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	targets := []struct {
		name  string
		seeds [][]byte
		run   func([]byte) cube.Workload
		min   int
	}{
		{"FuzzFineTune", fineTuneSeeds, func(data []byte) cube.Workload { return runFineTune(data) }, 30},
		{"FuzzRL", rlSeeds, func(data []byte) cube.Workload { return runRL(data) }, 30},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			// A namespace per target: both draw their release names from
			// the same few, and a release name belongs to one builder
			// kind (Apply refuses an RL run under a fine-tune's name).
			ns := env.Namespace(t)
			c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Clientset(env.Clientset))
			corpus := append(append([][]byte{}, target.seeds...), fuzzcorpus.Bytes(t, target.name)...)
			corpus = append(corpus, fuzzcorpus.Programs(10, 300, 2, 10)...)
			fuzzcorpus.StoredAll(t, c, env, ns, corpus, target.min, target.run, nil)
		})
	}
}

// These tests run against a real kube-apiserver with the training-operator
// CRDs installed (internal/testsupport/testenv); no operator runs.

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
