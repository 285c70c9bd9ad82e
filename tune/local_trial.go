package tune

import (
	"github.com/cubestudio/cube"

	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
)

// ErrPruned is what Trial.Report returns once early stopping stops the
// trial; the trial function returns it (or any error wrapping it) and the
// trial counts as early-stopped, not failed.
var ErrPruned = errors.New("trial stopped early")

// EarlyStopped is how a local trial ends when early stopping stops it
// (it returned ErrPruned); a trial otherwise ends cube.Succeeded or
// cube.Failed.
const EarlyStopped cube.Phase = "EarlyStopped"

// Trial is one evaluation in a local study: its parameter values and a way
// to report intermediate values.
//
// Float, Int and String return a value, not an error, to keep trial code
// short; reading a parameter the space does not have, or one of another
// kind, returns the zero value and fails the trial once it returns, with an
// error naming the parameter, so that a misspelt name cannot turn the
// search into the optimisation of a constant.
type Trial struct {
	Number  int
	values  map[string]any
	order   []string
	study   *Local
	prior   []TrialResult // the completed trials early stopping compares with
	reports []float64
	pruned  bool
	misuse  []error // wrong reads and reports; they fail the trial
	sampler string
}

// param returns the value of the parameter name as a T, recording a misuse
// when the trial has no such parameter or it is of another kind.
func param[T any](t *Trial, method, name string) T {
	var zero T
	if t == nil {
		return zero
	}
	v, ok := t.values[name]
	if !ok {
		t.misuse = append(t.misuse, fmt.Errorf("%s(%q): the search space has no such parameter (it has %q)", method, name, slices.Sorted(maps.Keys(t.values))))
		return zero
	}
	x, ok := v.(T)
	if !ok {
		t.misuse = append(t.misuse, fmt.Errorf("%s(%q): the parameter is %s", method, name, kindReader(v)))
		return zero
	}
	return x
}

func kindReader(v any) string {
	switch v.(type) {
	case int:
		return "an Int: read it with Int"
	case string:
		return "a Choice: read it with String"
	}
	return "a Float or Discrete: read it with Float"
}

// Float returns the value of a Float or Discrete parameter. Any other name
// returns 0 and fails the trial.
func (t *Trial) Float(name string) float64 { return param[float64](t, "Float", name) }

// Int returns the value of an Int parameter. Any other name returns 0 and
// fails the trial.
func (t *Trial) Int(name string) int { return param[int](t, "Int", name) }

// String returns the value of a Choice parameter. Any other name returns
// "" and fails the trial.
func (t *Trial) String(name string) string { return param[string](t, "String", name) }

// Values returns the parameter values formatted as Katib assigns them.
func (t *Trial) Values() map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return formatValues(t.values)
}

// errNoStudy is what Report returns on a Trial that no study made.
var errNoStudy = errors.New("report: the trial belongs to no study (trials come from Local.Run)")

// Report records the objective's value after step (the first report is
// step 1). With early stopping (MedianStop, HalvingStop, HyperbandStop) it
// returns ErrPruned once the trial is stopped; the trial function should
// then return.
func (t *Trial) Report(value float64) error {
	if t == nil || t.study == nil {
		return errNoStudy
	}
	if math.IsNaN(value) || math.IsInf(value, 0) {
		// Early stopping would compare it, and Katib's collectors would
		// record it as text no service parses back: fail the trial.
		err := fmt.Errorf("report %d: %v is not a finite number", len(t.reports)+1, value)
		t.misuse = append(t.misuse, err)
		return err
	}
	t.reports = append(t.reports, value)
	if t.pruned {
		return ErrPruned
	}
	if es := t.study.earlyStopping; es != nil && t.study.stops(*es, t.Number, t.reports, t.prior) {
		t.pruned = true
		return ErrPruned
	}
	return nil
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// TrialResult is a finished local trial.
type TrialResult struct {
	Number  int
	Values  map[string]string // as Katib assigns them
	Value   float64           // the objective value (NaN unless Succeeded)
	State   cube.Phase
	Reports []float64
	Err     error
	// Sampler is the algorithm that proposed the trial: the one set with
	// Algorithm, or under Auto the sampler it chose for this trial
	// ("sobol", "random", "bayesianoptimization", "tpe", "cmaes",
	// "quadratic", "trust-region", "multivariate-tpe").
	Sampler string
	params  map[string]any
}

// Float returns the value of a Float or Discrete parameter (0 if absent).
func (r TrialResult) Float(name string) float64 { v, _ := r.params[name].(float64); return v }

// Int returns the value of an Int parameter (0 if absent).
func (r TrialResult) Int(name string) int { v, _ := r.params[name].(int); return v }

// String returns the value of a Choice parameter ("" if absent).
func (r TrialResult) String(name string) string { v, _ := r.params[name].(string); return v }

// Result is a finished local study.
type Result struct {
	Trials []TrialResult // by trial number
	Best   *TrialResult  // nil when no trial succeeded
}

// Func is a trial run as a Go function: it reads its parameters from the
// trial and returns the objective value.
type Func func(ctx context.Context, t *Trial) (float64, error)
