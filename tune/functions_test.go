package tune_test

import (
	"context"
	"math"

	"github.com/cubestudio/cube/tune"
)

// benchFunction is a standard test function, written identically in
// testdata/optuna_bench.py so that both tuners minimise the same thing.
type benchFunction struct {
	name    string
	params  []tune.Param
	optimum float64 // the global minimum
	eval    func(t *tune.Trial) float64
}

func vector(t *tune.Trial, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = t.Float("x" + string(rune('0'+i)))
	}
	return x
}

func box(n int, lo, hi float64) []tune.Param {
	out := make([]tune.Param, n)
	for i := range out {
		out[i] = tune.Float("x"+string(rune('0'+i)), lo, hi)
	}
	return out
}

var hartmannA = [4][6]float64{
	{10, 3, 17, 3.5, 1.7, 8},
	{0.05, 10, 17, 0.1, 8, 14},
	{3, 3.5, 1.7, 10, 17, 8},
	{17, 8, 0.05, 10, 0.1, 14},
}

var hartmannP = [4][6]float64{
	{1312, 1696, 5569, 124, 8283, 5886},
	{2329, 4135, 8307, 3736, 1004, 9991},
	{2348, 1451, 3522, 2883, 3047, 6650},
	{4047, 8828, 8732, 5743, 1091, 381},
}

var hartmannAlpha = [4]float64{1.0, 1.2, 3.0, 3.2}

var benchFunctions = []benchFunction{
	{
		name:    "branin",
		params:  []tune.Param{tune.Float("x0", -5, 10), tune.Float("x1", 0, 15)},
		optimum: 0.397887357729739,
		eval: func(t *tune.Trial) float64 {
			x, y := t.Float("x0"), t.Float("x1")
			b, c := 5.1/(4*math.Pi*math.Pi), 5/math.Pi
			return math.Pow(y-b*x*x+c*x-6, 2) + 10*(1-1/(8*math.Pi))*math.Cos(x) + 10
		},
	},
	{
		name:    "hartmann6",
		params:  box(6, 0, 1),
		optimum: -3.32236801141551,
		eval: func(t *tune.Trial) float64 {
			x := vector(t, 6)
			sum := 0.0
			for i := range 4 {
				inner := 0.0
				for j := range 6 {
					inner += hartmannA[i][j] * math.Pow(x[j]-1e-4*hartmannP[i][j], 2)
				}
				sum += hartmannAlpha[i] * math.Exp(-inner)
			}
			return -sum
		},
	},
	{
		name:    "rosenbrock4",
		params:  box(4, -5, 10),
		optimum: 0,
		eval: func(t *tune.Trial) float64 {
			x := vector(t, 4)
			sum := 0.0
			for i := range 3 {
				sum += 100*math.Pow(x[i+1]-x[i]*x[i], 2) + math.Pow(1-x[i], 2)
			}
			return sum
		},
	},
	{
		// A mixed space: a linear, a log-scaled, an integer and a
		// categorical parameter, with its minimum 0 at x=1, lr=1e-3, n=7,
		// optimizer=adam.
		name: "mixed",
		params: []tune.Param{
			tune.Float("x", -5, 5),
			tune.Float("lr", 1e-5, 1e-1).Log(),
			tune.Int("n", 1, 10),
			tune.Choice("optimizer", "sgd", "adam", "rmsprop"),
		},
		optimum: 0,
		eval: func(t *tune.Trial) float64 {
			penalty := map[string]float64{"sgd": 0.5, "adam": 0, "rmsprop": 1}[t.String("optimizer")]
			n := float64(t.Int("n"))
			return math.Pow(t.Float("x")-1, 2) + math.Pow(math.Log10(t.Float("lr"))+3, 2) + penalty + (n-7)*(n-7)/10
		},
	},
}

// objectiveOf adapts a bench function to a trial function.
func objectiveOf(f benchFunction) tune.Func {
	return func(_ context.Context, t *tune.Trial) (float64, error) { return f.eval(t), nil }
}
