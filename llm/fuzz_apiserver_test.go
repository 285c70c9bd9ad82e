package llm_test

import (
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
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
