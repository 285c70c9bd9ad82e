package llm_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testenv"
)

// TestFuzzCorpusApplies runs the FuzzFineTune and FuzzRL corpora (seeds,
// saved inputs, and fixed-seed programs) and applies every workload
// Objects accepts to the API server with strict field validation, checking
// that every object is stored as rendered: what cube accepts, the server
// accepts.
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.WithNamespace(ns), cube.WithClientset(env.Clientset))
	targets := []struct {
		name  string
		seeds [][]byte
		run   func([]byte) cube.Workload
		min   int
	}{
		{"FuzzFineTune", fineTuneSeeds, func(data []byte) cube.Workload { return runFineTune(data) }, 40},
		{"FuzzRL", rlSeeds, func(data []byte) cube.Workload { return runRL(data) }, 40},
	}
	for _, target := range targets {
		t.Run(target.name, func(t *testing.T) {
			corpus := append(append([][]byte{}, target.seeds...), fuzzcorpus.Bytes(t, target.name)...)
			corpus = append(corpus, fuzzcorpus.Programs(10, 400, 2, 10)...)
			accepted := 0
			for i, data := range corpus {
				w := target.run(data)
				if _, err := w.Objects(); err != nil {
					continue
				}
				accepted++
				if !t.Run("", func(t *testing.T) { applyAndCompare(t, c, env, ns, w) }) {
					t.Logf("program %d %q was accepted by Objects", i, data)
				}
			}
			t.Logf("%d of %d programs accepted and applied", accepted, len(corpus))
			assert.GreaterOrEqual(t, accepted, target.min, "the corpus exercises accepted workloads, not only refusals")
		})
	}
}
