package tune_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/tune"
)

// Argument dictionaries for generated FuzzExperiment inputs: valid values
// first (the generator favours them), then hostile ones.
var (
	corpusNames       = []string{"fuzz", "grid", "hb", "", "Bad", strings.Repeat("x", 70)}
	corpusFloatParams = []string{"lr", "momentum", "x", "", "1x", "opt", "with space"}
	corpusIntParams   = []string{"layers", "epochs", "y", "", "lr", "opt"}
	corpusLows        = []float64{0.001, 0.01, 0.02, -1, 0, 1, math.NaN(), math.Inf(-1)}
	corpusHighs       = []float64{0.1, 0.5, 1, -1, 0.001, math.Inf(1)}
	corpusSteps       = []float64{0, 0, 0, 0.01, 0.1, -2, math.NaN()}
	corpusMins        = []int{1, 2, 0, -3, 5}
	corpusMaxes       = []int{8, 4, 3, 1, 0}
	corpusFirst       = []string{"adam", "sgd", "momentum", "", "a"}
	corpusSecond      = []string{"lamb", "rms", "b", "adam", ""}
	corpusMetrics     = []string{"accuracy", "loss", "score", "", "bad metric"}
	corpusParallel    = []int32{1, 2, 3, 0, -1, 30, math.MaxInt32}
	corpusMaxTrials   = []int32{10, 12, 30, 0, -5, 1}
	corpusMaxFailed   = []int32{1, 2, 3, 0, -5}
	// corpusAlgorithms index fuzzAlgorithms: random, TPE, multivariate
	// TPE and CMA-ES take any space; grid, Hyperband and PBT restrict it.
	corpusAlgorithms = []uint8{0, 1, 3, 4, 5, 6, 2, 7, 8}
)

// experimentCorpus is FuzzExperiment's seeds, the inputs go test -fuzz
// saved, and n inputs drawn from the dictionaries with a fixed seed.
func experimentCorpus(t *testing.T, n int) []experimentInput {
	corpus := append([]experimentInput{}, experimentSeeds...)
	for _, v := range fuzzcorpus.Saved(t, "FuzzExperiment") {
		require.Len(t, v, 17)
		corpus = append(corpus, experimentInput{v[0].(string), v[1].(string), v[2].(float64), v[3].(float64), v[4].(float64),
			v[5].(bool), v[6].(string), v[7].(int), v[8].(int), v[9].(string), v[10].(string), v[11].(string), v[12].(bool),
			v[13].(uint8), v[14].(int32), v[15].(int32), v[16].(int32)})
	}
	for _, b := range fuzzcorpus.Programs(12, n, 17, 17) {
		i := 0
		next := func() int { i++; return int(b[i-1]) }
		str := func(values []string) string { return values[next()%len(values)] }
		float := func(values []float64) float64 { return values[next()%len(values)] }
		integer := func(values []int) int { return values[next()%len(values)] }
		count := func(values []int32) int32 { return values[next()%len(values)] }
		corpus = append(corpus, experimentInput{
			name: str(corpusNames), floatName: str(corpusFloatParams), lo: float(corpusLows), hi: float(corpusHighs),
			step: float(corpusSteps), log: next()%2 == 1, intName: str(corpusIntParams), imin: integer(corpusMins),
			imax: integer(corpusMaxes), c1: str(corpusFirst), c2: str(corpusSecond), metric: str(corpusMetrics),
			maximize: next()%2 == 0, alg: corpusAlgorithms[next()%len(corpusAlgorithms)], parallel: count(corpusParallel), maxTrials: count(corpusMaxTrials),
			maxFailed: count(corpusMaxFailed),
		})
	}
	return corpus
}

// TestFuzzCorpusApplies runs the FuzzExperiment corpus: every experiment
// Objects accepts passes Katib's validator, and its objects are applied to
// the API server (strict field validation) and stored as rendered: what
// cube accepts, Katib and the server accept.
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	fuzzcorpus.StoredAll(t, c, env, ns, experimentCorpus(t, 300), 50,
		func(in experimentInput) cube.Workload { return in.experiment() },
		func(t *testing.T, w cube.Workload) {
			exp, err := w.(*tune.Experiment).Build()
			require.NoError(t, err)
			katibValidate(t, exp)
		})
}
