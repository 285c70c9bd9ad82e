package tune

import (
	"fmt"
	"math"
	"slices"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateSpace refuses the parameters whose declared distribution, step or
// values the algorithm's Katib suggestion service would not honour, so that
// what a Param says is what the trials get. Read from Katib v0.19.0
// (kubeflow/katib@578e60f1ce83), pkg/suggestion/v1beta1; the local tuner
// honours every declaration and does not apply these.
func (a Algorithm) validateSpace(params []Param) field.ErrorList {
	var errs field.ErrorList
	for i, p := range params {
		at := field.NewPath("spec", "parameters").Index(i).Child("feasibleSpace")
		refuse := func(child string, value any, why string) {
			errs = append(errs, field.Invalid(at.Child(child), value, fmt.Sprintf("%s, parameter %q: %s", a.name, p.name, why)))
		}
		numeric := p.kind == FloatKind || p.kind == IntKind
		switch a.name {
		case AlgorithmBayesian:
			// skopt/base_service.py:61-78 builds Integer(min, max),
			// Real(min, max, "log-uniform") and Categorical(list), whatever
			// the distribution and step.
			if p.kind == FloatKind && !p.log {
				refuse("distribution", katibv1beta1.DistributionUniform,
					"Katib's skopt service samples every Float log-uniformly (pkg/suggestion/v1beta1/skopt/base_service.py:66-74): declare it with Log() (and a positive min), or choose another algorithm")
			}
			if p.kind == IntKind && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"Katib's skopt service samples every Int uniformly (skopt/base_service.py:62-65): drop Log(), or choose another algorithm")
			}
			if numeric && p.step != 0 {
				refuse("step", p.step, "Katib's skopt service ignores the step (skopt/base_service.py:61-78): drop Step(), or choose another algorithm")
			}
		case AlgorithmCMAES, AlgorithmSobol:
			// goptuna/converter.go:110-165 maps a Float to a (discrete)
			// uniform distribution and an Int to an int uniform one; the
			// distribution is never read.
			if numeric && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"Katib's goptuna service samples uniformly whatever the distribution (pkg/suggestion/v1beta1/goptuna/converter.go:110-165): drop Log(), or choose random, tpe or multivariate-tpe")
			}
		case AlgorithmGrid:
			if p.kind == IntKind && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"grid enumerates min to max by the step, ignoring Log (pkg/suggestion/v1beta1/internal/search_space.py:52-57)")
			}
		case AlgorithmHyperband:
			// hyperband/parameter.py:73-77 samples numpy.random.uniform
			// between the bounds; parsing_util.py:55-64 reads nothing else.
			if numeric && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"Katib's hyperband service samples uniformly between min and max (pkg/suggestion/v1beta1/hyperband/parameter.py:73-77): drop Log()")
			}
			if numeric && p.step != 0 {
				refuse("step", p.step, "Katib's hyperband service ignores the step (hyperband/parsing_util.py:55-59): drop Step()")
			}
			if p.kind == DiscreteKind {
				if j := slices.IndexFunc(p.values, func(v float64) bool { return v != math.Trunc(v) }); j >= 0 {
					errs = append(errs, field.Invalid(at.Child("list").Index(j), p.values[j], fmt.Sprintf(
						"hyperband, parameter %q: Katib's hyperband service reads Discrete values with int() (pkg/suggestion/v1beta1/hyperband/parsing_util.py:61), which fails on a fraction", p.name)))
				}
			}
		case AlgorithmPBT:
			if p.kind == FloatKind && p.step == 0 {
				errs = append(errs, field.Required(at.Child("step"), fmt.Sprintf(
					"pbt, parameter %q: Katib's pbt service lists a Float's values with numpy.arange(min, max, float(step)) and fails without a step (pkg/suggestion/v1beta1/pbt/service.py:140-145)", p.name)))
			}
			if numeric && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"Katib's pbt service samples the values min, min+step, ... uniformly and perturbs them by 0.8 or 1.2, ignoring Log (pbt/service.py:140-158)")
			}
		case AlgorithmRandom, AlgorithmTPE:
			// hyperopt/base_service.py:68-104.
			if numeric && p.step != 0 && (!onStep(p.min, p.step) || !onStep(p.max, p.step)) {
				refuse("step", p.step, fmt.Sprintf(
					"Katib's hyperopt service draws round(uniform(min, max)/step)·step (hp.quniform, pkg/suggestion/v1beta1/hyperopt/base_service.py:71-77), multiples of the step rather than min, min+step, ...: min (%s) and max (%s) must be multiples of it",
					formatFloat(p.min), formatFloat(p.max)))
			}
			if p.kind == IntKind && p.log {
				refuse("distribution", katibv1beta1.DistributionLogUniform,
					"Katib's hyperopt service draws a log-scaled Int as int(loguniform(min, max)) (hyperopt/base_service.py:100 and :334), which never reaches max: use multivariate-tpe, or drop Log()")
			}
		}
	}
	return errs
}

// onStep reports whether x is a whole multiple of step, up to rounding.
func onStep(x, step float64) bool {
	r := x / step
	return math.Abs(r-math.Round(r)) <= 1e-9*math.Max(1, math.Abs(r))
}
