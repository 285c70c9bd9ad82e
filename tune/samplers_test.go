package tune_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/tune"
)

func values(t *testing.T, study *tune.Local, fn tune.Func) [][]float64 {
	t.Helper()
	res, err := study.Run(t.Context(), fn)
	require.NoError(t, err)
	out := make([][]float64, len(res.Trials))
	for i, r := range res.Trials {
		for d := 0; ; d++ {
			name := fmt.Sprintf("u%d", d)
			if _, ok := r.Values[name]; !ok {
				break
			}
			out[i] = append(out[i], r.Float(name))
		}
	}
	return out
}

func unitCube(n int) []tune.Param {
	out := make([]tune.Param, n)
	for i := range out {
		out[i] = tune.Float(fmt.Sprintf("u%d", i), 0, 1)
	}
	return out
}

func zero(context.Context, *tune.Trial) (float64, error) { return 0, nil }

// TestLocalSobolIsANet checks the defining property of the Sobol sequence,
// which the seeded digital shift keeps: the first 2^m points put exactly
// one point in every interval [k/2^m, (k+1)/2^m) of each coordinate, and
// the first two coordinates form a (0, m, 2)-net: one point in every
// elementary box of area 2^-m.
func TestLocalSobolIsANet(t *testing.T) {
	const m = 6
	for _, seed := range []int{0, 9} {
		pts := values(t, tune.NewLocal(tune.Minimize("l"), unitCube(32)...).Algorithm(tune.Sobol()).MaxTrials(1<<m).Seed(seed), zero)
		for d := range 32 {
			seen := map[int]bool{}
			for _, p := range pts {
				seen[int(p[d]*(1<<m))] = true
			}
			assert.Len(t, seen, 1<<m, "seed %d coordinate %d", seed, d)
		}
		for a := 0; a <= m; a++ {
			boxes := map[[2]int]bool{}
			for _, p := range pts {
				boxes[[2]int{int(p[0] * float64(int(1)<<a)), int(p[1] * float64(int(1)<<(m-a)))}] = true
			}
			assert.Len(t, boxes, 1<<m, "seed %d boxes 2^-%d × 2^-%d", seed, a, m-a)
		}
	}
	a := values(t, tune.NewLocal(tune.Minimize("l"), unitCube(3)...).Algorithm(tune.Sobol()).MaxTrials(4).Seed(1), zero)
	b := values(t, tune.NewLocal(tune.Minimize("l"), unitCube(3)...).Algorithm(tune.Sobol()).MaxTrials(4).Seed(2), zero)
	assert.NotEqual(t, a, b, "the seed shifts the sequence")
}

func sphere(center []float64) tune.Func {
	return func(_ context.Context, t *tune.Trial) (float64, error) {
		s := 0.0
		for d, c := range center {
			s += math.Pow(t.Float(fmt.Sprintf("u%d", d))-c, 2)
		}
		return s, nil
	}
}

func TestLocalCMAESConverges(t *testing.T) {
	center := []float64{0.2, 0.7, 0.35, 0.6}
	res, err := tune.NewLocal(tune.Minimize("l"), unitCube(4)...).Algorithm(tune.CMAES()).MaxTrials(300).Seed(1).Run(t.Context(), sphere(center))
	require.NoError(t, err)
	assert.Less(t, res.Best.Value, 1e-5, "CMA-ES narrows in on the sphere's centre")
	// Late generations sample close to the optimum, not just one lucky trial.
	late := 0.0
	for _, r := range res.Trials[len(res.Trials)-32:] {
		late += r.Value / 32
	}
	assert.Less(t, late, 1e-3)
	random, err := tune.NewLocal(tune.Minimize("l"), unitCube(4)...).Algorithm(tune.Random()).MaxTrials(300).Seed(1).Run(t.Context(), sphere(center))
	require.NoError(t, err)
	assert.Greater(t, random.Best.Value, 100*res.Best.Value)
}

func TestLocalBayesianFindsBranin(t *testing.T) {
	branin := benchFunctions[0]
	for _, seed := range []int{1, 2, 3} {
		res, err := tune.NewLocal(tune.Minimize("y"), branin.params...).Algorithm(tune.Bayesian()).MaxTrials(40).Seed(seed).Run(t.Context(), objectiveOf(branin))
		require.NoError(t, err)
		assert.Less(t, res.Best.Value-branin.optimum, 0.05, "seed %d", seed)
	}
	// Maximising the negation gives the same trials.
	a, err := tune.NewLocal(tune.Minimize("y"), branin.params...).Algorithm(tune.Bayesian()).MaxTrials(20).Seed(4).Run(t.Context(), objectiveOf(branin))
	require.NoError(t, err)
	b, err := tune.NewLocal(tune.Maximize("y"), branin.params...).Algorithm(tune.Bayesian()).MaxTrials(20).Seed(4).
		Run(t.Context(), func(_ context.Context, tr *tune.Trial) (float64, error) { return -branin.eval(tr), nil })
	require.NoError(t, err)
	for i := range a.Trials {
		assert.Equal(t, a.Trials[i].Values, b.Trials[i].Values, "trial %d", i)
	}
}

func TestLocalUnivariateTPEDiffers(t *testing.T) {
	uni := values(t, tune.NewLocal(tune.Minimize("y"), unitCube(6)...).Algorithm(tune.TPE()).MaxTrials(30).Seed(1), sphere(make([]float64, 6)))
	multi := values(t, tune.NewLocal(tune.Minimize("y"), unitCube(6)...).Algorithm(tune.MultivariateTPE()).MaxTrials(30).Seed(1), sphere(make([]float64, 6)))
	assert.Equal(t, uni[:10], multi[:10], "the same random startup trials")
	assert.NotEqual(t, uni[10:], multi[10:])
}

// TestLocalConstantLiar checks that, with four trials at a time, the
// constant liar keeps a trial away from the three running ones: the
// average distance to the nearest running trial grows.
func TestLocalConstantLiar(t *testing.T) {
	for _, alg := range []tune.Algorithm{tune.TPE(), tune.MultivariateTPE(), tune.Bayesian()} {
		spread := func(liar bool) float64 {
			total, n := 0.0, 0
			for seed := range 4 {
				pts := values(t, tune.NewLocal(tune.Minimize("l"), unitCube(2)...).Algorithm(alg).MaxTrials(40).Parallelism(4).
					Seed(seed).ConstantLiar(liar), sphere([]float64{0.3, 0.3}))
				for i := 14; i < len(pts); i++ {
					nearest := math.Inf(1)
					for j := i - 3; j < i; j++ {
						nearest = math.Min(nearest, math.Hypot(pts[i][0]-pts[j][0], pts[i][1]-pts[j][1]))
					}
					total += nearest
					n++
				}
			}
			return total / float64(n)
		}
		with, without := spread(true), spread(false)
		assert.Greater(t, with, 1.2*without, "%s: nearest running trial %.4f with the liar, %.4f without", alg.Name(), with, without)
	}
}

// TestTPEBandwidthsAreOptunas: univariate TPE's kernels have the widths
// Optuna 3.1's estimator gives the same points (printed by
// optuna.samplers._tpe.parzen_estimator._ParzenEstimator with TPESampler's
// defaults: prior, magic clip, consider_endpoints=False); a good point
// near a bound gets its inner gap, not the distance to the bound.
func TestTPEBandwidthsAreOptunas(t *testing.T) {
	for _, c := range []struct {
		xs, want []float64
	}{
		{[]float64{0.1, 0.7}, []float64{0.4, 0.25, 1}},
		{[]float64{0.9}, []float64{0.4, 1}},
		{[]float64{0.05, 0.1, 0.12, 0.95}, []float64{1.0 / 6, 1.0 / 6, 0.38, 0.45, 1}},
	} {
		assert.InDeltaSlice(t, c.want, tune.ParzenSigmas1D(c.xs, 0, 1), 1e-9, "%v", c.xs)
		// The same on another range, scaled.
		scaled := make([]float64, len(c.xs))
		for i, x := range c.xs {
			scaled[i] = -5 + 10*x
		}
		got := tune.ParzenSigmas1D(scaled, -5, 5)
		for i := range got {
			got[i] /= 10
		}
		assert.InDeltaSlice(t, c.want, got, 1e-9, "%v on [-5, 5]", c.xs)
	}
}

// TestTPEDensityIsOptunas: univariate TPE's mixture has the log density
// Optuna 3.1's estimator gives the same trials (printed by
// optuna.samplers._tpe.parzen_estimator._ParzenEstimator(...).log_pdf with
// TPESampler's defaults and default_weights): its kernels leave out the
// log of the bandwidth, and from 25 trials the older ones weigh less.
func TestTPEDensityIsOptunas(t *testing.T) {
	for _, c := range []struct {
		xs, at, want []float64
		lo, hi       float64
	}{
		{xs: []float64{0.551, 0.708, 0.291}, lo: 0, hi: 1, at: []float64{0, 0.3, 0.5, 0.77, 1},
			want: []float64{-1.2962368612939574, -0.8594901308552138, -0.7194458463965282, -0.8744750500316678, -1.289603482600154}},
		{xs: []float64{4.662, 0.711, 4.946, -2.545, 9.439, 0.2, 9.876, -1.474, 3.785, 1.1, -2.956, 3.162, 2.773, 6.503, 9.008,
			-3.654, -2.063, 9.913, -1.472, -1.415, 4.436, 6.024, 5.325, -4.533, 8.538, -0.703, 3.334, 0.646, -4.601, 2.412},
			lo: -5, hi: 10, at: []float64{-5, -0.5, 2.5, 6.55, 10},
			want: []float64{-2.7131248427165255, -2.524037505732893, -2.4872407166064567, -2.593252371341358, -2.253070406723051}},
	} {
		assert.InDeltaSlice(t, c.want, tune.ParzenLogDensity1D(c.xs, c.lo, c.hi, c.at), 1e-9, "%d trials", len(c.xs))
	}
}

// TestTPEAgeWeightsAreOptunas: the weights by age are Optuna 3.1's
// default_weights (optuna/samplers/_tpe/sampler.py), as it printed them.
func TestTPEAgeWeightsAreOptunas(t *testing.T) {
	ones := func(n int) []float64 {
		w := make([]float64, n)
		for i := range w {
			w[i] = 1
		}
		return w
	}
	for n, want := range map[int][]float64{
		0:  {},
		3:  ones(3),
		25: ones(25),
		26: append([]float64{0.038461538461538464}, ones(25)...),
		28: append([]float64{0.03571428571428571, 0.5178571428571429, 1}, ones(25)...),
	} {
		assert.InDeltaSlice(t, want, tune.TPEAgeWeights(n), 1e-12, "%d trials", n)
	}
}
