package tune

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The algorithm names Katib v0.19.0 ships (katib-config's
// runtime.suggestions), and the suggestion service that runs each.
const (
	AlgorithmRandom          = "random"               // hyperopt
	AlgorithmTPE             = "tpe"                  // hyperopt
	AlgorithmGrid            = "grid"                 // optuna
	AlgorithmMultivariateTPE = "multivariate-tpe"     // optuna
	AlgorithmCMAES           = "cmaes"                // goptuna
	AlgorithmSobol           = "sobol"                // goptuna
	AlgorithmBayesian        = "bayesianoptimization" // skopt
	AlgorithmHyperband       = "hyperband"            // hyperband
	AlgorithmPBT             = "pbt"                  // pbt
	EarlyStoppingMedianStop  = "medianstop"           // medianstop
)

// The early stopping only the local tuner runs (Katib v0.19.0 ships
// medianstop alone, so an Experiment refuses them).
const (
	EarlyStoppingHalving   = "successive-halving"
	EarlyStoppingHyperband = "hyperband"
)

// Algorithm is a search algorithm and its settings. It is a value: every
// setter returns a modified copy. Setters that the algorithm's Katib
// suggestion service does not know are reported by Objects, as the service
// would reject them (or, for goptuna, silently ignore them).
type Algorithm struct {
	name     string
	settings []setting
}

type setting struct{ name, value string }

// Random samples every parameter independently (hyperopt).
func Random() Algorithm { return Algorithm{name: AlgorithmRandom} }

// TPE is the Tree-structured Parzen Estimator (hyperopt), univariate:
// each parameter is modelled and chosen on its own, in Katib and locally.
func TPE() Algorithm { return Algorithm{name: AlgorithmTPE} }

// Grid tries every combination (optuna's grid sampler). Every Float needs a
// Step, and MaxTrials must not exceed the number of combinations.
func Grid() Algorithm { return Algorithm{name: AlgorithmGrid} }

// MultivariateTPE is TPE over the joint distribution (optuna, with
// constant liar for parallel trials).
func MultivariateTPE() Algorithm { return Algorithm{name: AlgorithmMultivariateTPE} }

// CMAES is the covariance matrix adaptation evolution strategy (goptuna); in
// an Experiment it needs at least two Float or Int parameters and no Log,
// which goptuna ignores (the local tuner runs it over any space).
func CMAES() Algorithm { return Algorithm{name: AlgorithmCMAES} }

// Sobol samples a Sobol quasi-random sequence (goptuna); it takes no
// settings, and in an Experiment no Log, which goptuna ignores.
func Sobol() Algorithm { return Algorithm{name: AlgorithmSobol} }

// Bayesian is Bayesian optimisation with a surrogate model (scikit-optimize;
// locally a Gaussian process with a Matérn 5/2 kernel and expected
// improvement). Katib's skopt service samples every Float log-uniformly and
// every Int uniformly and ignores steps, so in an Experiment each Float
// needs Log (a positive min), no Int may have Log, and nothing a Step.
func Bayesian() Algorithm { return Algorithm{name: AlgorithmBayesian} }

// Hyperband runs successive halving brackets over a resource parameter
// (epochs, say) whose largest budget is maxResource (Katib's r_l). Katib's
// service samples the other parameters uniformly, so they take neither
// Log nor Step, and reads Discrete values as integers.
func Hyperband(resourceParam string, maxResource float64) Algorithm {
	return Algorithm{name: AlgorithmHyperband}.
		with("resource_name", resourceParam).
		with("r_l", formatFloat(maxResource))
}

// PBT is population-based training: trialDir is where trials checkpoint
// (Katib's suggestion_trial_dir), population the number of members (at
// least 5), truncation the fraction replaced each generation, in [0, 1].
//
// Katib's pod webhook mounts the suggestion's PVC at trialDir in every
// trial's primary container (pkg/webhook/v1beta1/pod/inject_webhook.go,
// mutateSuggestionVolume), and the PVC exists only under the FromVolume
// resume policy (pkg/controller.v1beta1/suggestion/suggestion_controller.go:197-209):
// an Experiment with PBT renders FromVolume unless Resume says otherwise,
// and Build refuses another policy. The webhook skips that mount for the
// Push collector, so Build refuses Push too. Every Float needs a Step: the
// service lists the values with numpy.arange(min, max, step)
// (pbt/service.py:140-145). The PVC katib-config asks for is ReadWriteMany
// (manifests/v1beta1/installs/katib-standalone/katib-config.yaml): the
// cluster needs a storage class that provides it.
func PBT(trialDir string, population int, truncation float64) Algorithm {
	return Algorithm{name: AlgorithmPBT}.
		with("suggestion_trial_dir", trialDir).
		with("n_population", strconv.Itoa(population)).
		with("truncation_threshold", formatFloat(truncation))
}

// Name returns the Katib algorithm name.
func (a Algorithm) Name() string { return a.name }

// with sets a setting, replacing an earlier one of the same name.
func (a Algorithm) with(name, value string) Algorithm {
	out := slices.Clone(a.settings)
	for i := range out {
		if out[i].name == name {
			out[i].value = value
			a.settings = out
			return a
		}
	}
	a.settings = append(out, setting{name, value})
	return a
}

// Seed makes the algorithm's sampling reproducible (random_state).
func (a Algorithm) Seed(seed int) Algorithm { return a.with("random_state", strconv.Itoa(seed)) }

// Gamma is TPE's fraction of good trials, in (0, 1) (hyperopt's gamma).
func (a Algorithm) Gamma(gamma float64) Algorithm { return a.with("gamma", formatFloat(gamma)) }

// PriorWeight is TPE's weight of the prior, above zero.
func (a Algorithm) PriorWeight(w float64) Algorithm { return a.with("prior_weight", formatFloat(w)) }

// EICandidates is the number of candidates TPE scores by expected
// improvement (hyperopt's n_EI_candidates, optuna's n_ei_candidates).
func (a Algorithm) EICandidates(n int) Algorithm {
	if a.name == AlgorithmTPE {
		return a.with("n_EI_candidates", strconv.Itoa(n))
	}
	return a.with("n_ei_candidates", strconv.Itoa(n))
}

// StartupTrials is the number of random trials before a model guides the
// search (multivariate-tpe's n_startup_trials).
func (a Algorithm) StartupTrials(n int) Algorithm {
	return a.with("n_startup_trials", strconv.Itoa(n))
}

// Sigma is CMA-ES's initial step size, above zero.
func (a Algorithm) Sigma(sigma float64) Algorithm { return a.with("sigma", formatFloat(sigma)) }

// RestartStrategy is CMA-ES's restart strategy: "ipop", "bipop" or "none".
func (a Algorithm) RestartStrategy(s string) Algorithm { return a.with("restart_strategy", s) }

// BaseEstimator is the surrogate model of Bayesian optimisation: "GP",
// "RF", "ET" or "GBRT".
func (a Algorithm) BaseEstimator(e string) Algorithm { return a.with("base_estimator", e) }

// InitialPoints is the number of random points before Bayesian
// optimisation fits its model.
func (a Algorithm) InitialPoints(n int) Algorithm {
	return a.with("n_initial_points", strconv.Itoa(n))
}

// AcquisitionFunc is Bayesian optimisation's acquisition function:
// "gp_hedge", "LCB", "EI", "PI", "EIps" or "PIps".
func (a Algorithm) AcquisitionFunc(f string) Algorithm { return a.with("acq_func", f) }

// AcquisitionOptimizer is how Bayesian optimisation maximises the
// acquisition function: "auto", "sampling" or "lbfgs".
func (a Algorithm) AcquisitionOptimizer(o string) Algorithm { return a.with("acq_optimizer", o) }

// Eta is Hyperband's halving rate, at least 2 (Katib defaults it to 3).
func (a Algorithm) Eta(eta int) Algorithm { return a.with("eta", strconv.Itoa(eta)) }

// ResampleProbability is PBT's resample_probability, which Build refuses:
// Katib v0.19.0's pbt service compares the setting's text with numbers
// (pkg/suggestion/v1beta1/pbt/service.py:69, `0 <= settings[...] <= 1` on a
// str), a TypeError that the controller takes as a failed validation
// (codes.Unknown, pkg/controller.v1beta1/suggestion/suggestionclient), so
// every PBT Experiment with it fails. Without it PBT perturbs each value by
// 0.8 or 1.2.
//
// Deprecated: Katib v0.19.0's pbt service fails on it, so an Experiment
// with it never builds; it stays so that a port of a Katib YAML finds why.
func (a Algorithm) ResampleProbability(p float64) Algorithm {
	return a.with("resample_probability", formatFloat(p))
}

// Setting sets a raw setting by name, for settings without a typed setter.
// It is validated like the others.
func (a Algorithm) Setting(name, value string) Algorithm { return a.with(name, value) }

// settingRule checks one setting's value.
type settingRule func(value string) string

func intAtLeast(min int) settingRule {
	return func(v string) string {
		n, err := strconv.Atoi(v)
		if err != nil {
			return "must be an integer"
		}
		if n < min {
			return fmt.Sprintf("must be at least %d", min)
		}
		return ""
	}
}

// numpySeed is a random_state the Python services pass to numpy's
// RandomState (hyperopt/base_service.py:57; skopt.Optimizer and optuna's
// samplers seed one too), which refuses a seed outside [0, 2^32-1] when the
// service first suggests, failing the experiment.
func numpySeed(v string) string {
	n, err := strconv.ParseInt(v, 10, 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return "must be at most 4294967295 (numpy's RandomState seed)"
	case err != nil:
		return "must be an integer"
	case n < 0:
		return "must be at least 0"
	case n > math.MaxUint32:
		return "must be at most 4294967295 (numpy's RandomState seed)"
	}
	return ""
}

func anyInt(v string) string {
	if _, err := strconv.Atoi(v); err != nil {
		return "must be an integer"
	}
	return ""
}

// floatIn checks lo < v < hi (open) or lo <= v <= hi (closed).
func floatIn(lo, hi float64, closed bool) settingRule {
	return func(v string) string {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			return "must be a finite number"
		}
		if closed && (f < lo || f > hi) {
			return fmt.Sprintf("must be in [%s, %s]", formatFloat(lo), formatFloat(hi))
		}
		if !closed && (f <= lo || f >= hi) {
			return fmt.Sprintf("must be in (%s, %s)", formatFloat(lo), formatFloat(hi))
		}
		return ""
	}
}

func oneOf(values ...string) settingRule {
	return func(v string) string {
		if !slices.Contains(values, v) {
			return fmt.Sprintf("must be one of %q", values)
		}
		return ""
	}
}

func absDir(v string) string { return cleanAbsPath(v) }

// cleanAbsPath checks a path Katib mounts or reads in the trial's
// container: absolute, and without "." or ".." parts or a trailing slash
// to hide where it lands ("/a/../../etc" is /etc), and not the root.
func cleanAbsPath(v string) string {
	switch {
	case !filepath.IsAbs(v):
		return "must be an absolute path"
	case strings.TrimSuffix(filepath.Clean(v), "/") != strings.TrimSuffix(v, "/"):
		return fmt.Sprintf("must be a clean path (it is %s)", filepath.Clean(v))
	case filepath.Clean(v) == "/":
		return "must not be the root directory"
	}
	return ""
}

// algorithmRules are the settings each algorithm's Katib suggestion service
// accepts, with their ranges, read from Katib v0.19.0:
// pkg/suggestion/v1beta1/hyperopt/service.py (random, tpe),
// optuna/service.py (grid, multivariate-tpe), goptuna/converter.go (cmaes,
// sobol), skopt/service.py (bayesianoptimization), hyperband/service.py and
// pbt/service.py (ValidateAlgorithmSettings), and
// pkg/earlystopping/v1beta1/medianstop/service.py.
var algorithmRules = map[string]map[string]settingRule{
	AlgorithmRandom: {"random_state": numpySeed},
	AlgorithmTPE: {
		"gamma":           floatIn(0, 1, false),
		"prior_weight":    floatIn(0, math.MaxFloat64, false),
		"n_EI_candidates": intAtLeast(1),
		"random_state":    numpySeed,
	},
	AlgorithmGrid: {"random_state": numpySeed},
	AlgorithmMultivariateTPE: {
		"n_startup_trials": intAtLeast(0),
		"n_ei_candidates":  intAtLeast(0),
		"random_state":     numpySeed,
	},
	AlgorithmCMAES: {
		"random_state": anyInt,
		// goptuna parses any float; a step size must be positive.
		"sigma":            floatIn(0, math.MaxFloat64, false),
		"restart_strategy": oneOf("ipop", "bipop", "none"),
	},
	AlgorithmSobol: {},
	AlgorithmBayesian: {
		"base_estimator":   oneOf("GP", "RF", "ET", "GBRT"),
		"n_initial_points": intAtLeast(0),
		"acq_func":         oneOf("gp_hedge", "LCB", "EI", "PI", "EIps", "PIps"),
		"acq_optimizer":    oneOf("auto", "sampling", "lbfgs"),
		"random_state":     numpySeed,
	},
	AlgorithmHyperband: {
		"resource_name": func(v string) string { // and checked against the parameters
			if v == "" {
				return "must name a parameter"
			}
			return ""
		},
		"r_l": floatIn(0, math.MaxFloat64, false),
		// Katib turns eta <= 0 into 3, and eta 1 divides by log(1) = 0.
		"eta": intAtLeast(2),
	},
	AlgorithmPBT: {
		"suggestion_trial_dir": absDir,
		"n_population":         intAtLeast(5),
		"truncation_threshold": floatIn(0, 1, true),
		"resample_probability": func(string) string {
			return "Katib v0.19.0's pbt service compares the setting's text with numbers (pkg/suggestion/v1beta1/pbt/service.py:69) and fails every Experiment that sets it; leave it unset (PBT then perturbs values by 0.8 or 1.2)"
		},
	},
}

// requiredSettings are the settings without which a service refuses the
// experiment.
var requiredSettings = map[string][]string{
	AlgorithmHyperband: {"resource_name", "r_l"},
	AlgorithmPBT:       {"suggestion_trial_dir", "n_population", "truncation_threshold"},
}

func validateSettings(name string, settings []setting, rules map[string]settingRule, required []string, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	have := map[string]bool{}
	for i, s := range settings {
		p := path.Child("algorithmSettings").Index(i)
		have[s.name] = true
		rule, ok := rules[s.name]
		if !ok {
			errs = append(errs, field.NotSupported(p.Child("name"), s.name, sortedNames(rules)))
			continue
		}
		if msg := rule(s.value); msg != "" {
			errs = append(errs, field.Invalid(p.Child("value"), s.value, fmt.Sprintf("%s: %s", s.name, msg)))
		}
	}
	for _, req := range required {
		if !have[req] {
			errs = append(errs, field.Required(path.Child("algorithmSettings"), fmt.Sprintf("%s needs the setting %s", name, req)))
		}
	}
	return errs
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// setting returns the value of a setting, and whether it is set.
func (a Algorithm) setting(name string) (string, bool) {
	for _, s := range a.settings {
		if s.name == name {
			return s.value, true
		}
	}
	return "", false
}

// validate checks the algorithm against Katib's services, given the
// search space and the trial counts (parallel is Katib's effective
// parallelTrialCount, maxTrials 0 when unset).
func (a Algorithm) validate(path *field.Path, params []Param, parallel, maxTrials int32, parallelPath, maxPath *field.Path) field.ErrorList {
	rules, ok := algorithmRules[a.name]
	if !ok {
		return field.ErrorList{field.NotSupported(path.Child("algorithmName"), a.name, sortedNames(algorithmRules))}
	}
	errs := validateSettings(a.name, a.settings, rules, requiredSettings[a.name], path)
	errs = append(errs, a.validateSpace(params)...)
	switch a.name {
	case AlgorithmGrid:
		combos := 1
		for i, p := range params {
			n := p.gridSize()
			if n == 0 && p.kind == FloatKind {
				errs = append(errs, field.Required(field.NewPath("spec", "parameters").Index(i).Child("feasibleSpace", "step"),
					fmt.Sprintf("grid needs a step on Float %q", p.name)))
			}
			if combos < math.MaxInt32 {
				combos *= min(max(n, 1), math.MaxInt32) // below 2^62: no overflow
			}
		}
		if maxTrials > 0 && int(maxTrials) > combos {
			errs = append(errs, field.Invalid(maxPath, maxTrials, fmt.Sprintf("grid has only %d combinations", combos)))
		}
	case AlgorithmCMAES:
		continuous := 0
		for _, p := range params {
			if p.kind == FloatKind || p.kind == IntKind {
				continuous++
			}
		}
		if continuous < 2 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "parameters"), continuous,
				"CMA-ES needs at least two Float or Int parameters"))
		}
	case AlgorithmHyperband:
		if res, ok := a.setting("resource_name"); ok {
			i := slices.IndexFunc(params, func(p Param) bool { return p.name == res })
			switch {
			case i < 0:
				errs = append(errs, field.Invalid(path.Child("algorithmSettings").Key("resource_name"), res, "must name a parameter"))
			case params[i].kind != IntKind && params[i].kind != FloatKind:
				errs = append(errs, field.Invalid(path.Child("algorithmSettings").Key("resource_name"), res, "the resource must be an Int or Float"))
			}
		}
		rl, errRL := strconv.ParseFloat(func() string { v, _ := a.setting("r_l"); return v }(), 64)
		eta := 3
		if v, ok := a.setting("eta"); ok {
			if n, err := strconv.Atoi(v); err == nil && n >= 2 {
				eta = n
			}
		}
		if errRL == nil && rl > 0 {
			// Katib's hyperband service: s_max = int(log(r_l)/log(eta)), and
			// parallelTrialCount must reach ceil(eta^s_max).
			// In float: a large r_l needs more than an int32 holds (an
			// int32 conversion of 2^996 wrapped to a negative need).
			smax := math.Floor(math.Log(rl) / math.Log(float64(eta)))
			need := math.Ceil(math.Pow(float64(eta), smax))
			if float64(parallel) < need {
				errs = append(errs, field.Invalid(parallelPath, parallel, fmt.Sprintf("hyperband with r_l %s and eta %d needs at least %s parallel trials", formatFloat(rl), eta, formatNumber(need))))
			}
		}
	}
	return errs
}

func (a Algorithm) katib() *common.AlgorithmSpec {
	spec := &common.AlgorithmSpec{AlgorithmName: a.name}
	for _, s := range a.settings {
		spec.AlgorithmSettings = append(spec.AlgorithmSettings, common.AlgorithmSetting{Name: s.name, Value: s.value})
	}
	return spec
}

// EarlyStopping stops trials that fall behind. It is a value.
type EarlyStopping struct {
	name     string
	settings []setting
}

// MedianStop stops a trial whose best objective value so far is worse than
// the median of the running averages of completed trials at the same step.
func MedianStop() EarlyStopping { return EarlyStopping{name: EarlyStoppingMedianStop} }

// MinTrials is how many trials must have completed before any is stopped
// (min_trials_required, above zero; Katib's default is 3).
func (e EarlyStopping) MinTrials(n int) EarlyStopping {
	return e.with("min_trials_required", strconv.Itoa(n))
}

// StartStep is the number of reports a trial makes before it may be
// stopped (start_step, at least 1; Katib's default is 4 for MedianStop).
// For HalvingStop and HyperbandStop it is the first rung, the minimum
// resource r (default 1).
func (e EarlyStopping) StartStep(n int) EarlyStopping {
	return e.with("start_step", strconv.Itoa(n))
}

// HalvingStop is asynchronous successive halving (ASHA; Li et al., "A
// System for Massively Parallel Hyperparameter Tuning", MLSys 2020) as an
// early-stopping rule, the way Optuna's SuccessiveHalvingPruner runs it:
// rung k is the report number StartStep·Eta^(EarlyStoppingRate+k); a trial
// reaching a rung goes on only if its report there is among the best
// ⌊n/Eta⌋ (at least the best one) of the n reports there — its own and
// those of the finished trials it is judged against. Defaults: StartStep
// 1, Eta 3, EarlyStoppingRate 0. Local only.
func HalvingStop() EarlyStopping { return EarlyStopping{name: EarlyStoppingHalving} }

// HyperbandStop is Hyperband (Li et al., "Hyperband: A Novel Bandit-Based
// Approach to Hyperparameter Optimization", JMLR 2018) as early stopping:
// with s_max = ⌊log_Eta(maxSteps/StartStep)⌋ it runs s_max+1 HalvingStop
// brackets, bracket b with EarlyStoppingRate b, and gives bracket b
// ⌈(s_max+1)/(s_max-b+1)·Eta^(s_max-b)⌉ of every round of trials, in order
// (trial numbers modulo the round's size); a trial is judged only against
// its own bracket. Defaults: StartStep 1, Eta 3. Local only.
func HyperbandStop(maxSteps int) EarlyStopping {
	return EarlyStopping{name: EarlyStoppingHyperband, settings: []setting{{"max_step", strconv.Itoa(maxSteps)}}}
}

// Eta is the reduction factor of HalvingStop and HyperbandStop, at least 2:
// one trial in Eta goes on at each rung.
func (e EarlyStopping) Eta(eta int) EarlyStopping {
	return e.with("eta", strconv.Itoa(eta))
}

// EarlyStoppingRate is HalvingStop's minimum early-stopping rate s, at
// least 0: the first rung is at report StartStep·Eta^s.
func (e EarlyStopping) EarlyStoppingRate(s int) EarlyStopping {
	return e.with("early_stopping_rate", strconv.Itoa(s))
}

// with sets a setting, replacing an earlier one of the same name.
func (e EarlyStopping) with(name, value string) EarlyStopping {
	e.settings = Algorithm{settings: e.settings}.with(name, value).settings
	return e
}

// Name returns the early-stopping algorithm's name.
func (e EarlyStopping) Name() string { return e.name }

// localEarlyStoppingRules are the early stopping the local tuner runs:
// Katib's medianstop and the local-only halving rules.
var localEarlyStoppingRules = map[string]map[string]settingRule{
	EarlyStoppingMedianStop: earlyStoppingRules[EarlyStoppingMedianStop],
	EarlyStoppingHalving: {
		"start_step":          intAtLeast(1),
		"eta":                 intAtLeast(2),
		"early_stopping_rate": intAtLeast(0),
	},
	EarlyStoppingHyperband: {
		"start_step": intAtLeast(1),
		"eta":        intAtLeast(2),
		"max_step":   intAtLeast(1),
	},
}

// validateLocal checks early stopping for the local tuner.
func (e EarlyStopping) validateLocal(path *field.Path) field.ErrorList {
	rules, ok := localEarlyStoppingRules[e.name]
	if !ok {
		return field.ErrorList{field.NotSupported(path.Child("algorithmName"), e.name, sortedNames(localEarlyStoppingRules))}
	}
	var required []string
	if e.name == EarlyStoppingHyperband {
		required = []string{"max_step"}
	}
	errs := validateSettings(e.name, e.settings, rules, required, path)
	if e.name == EarlyStoppingHyperband && len(errs) == 0 {
		if start, maxStep := intSetting(e.settings, "start_step", 1), intSetting(e.settings, "max_step", 0); maxStep < start {
			errs = append(errs, field.Invalid(path.Child("algorithmSettings").Key("max_step"), maxStep,
				fmt.Sprintf("must be at least start_step (%d)", start)))
		}
	}
	return errs
}

var earlyStoppingRules = map[string]map[string]settingRule{
	EarlyStoppingMedianStop: {
		"min_trials_required": intAtLeast(1),
		"start_step":          intAtLeast(1),
	},
}

func (e EarlyStopping) validate(path *field.Path) field.ErrorList {
	rules, ok := earlyStoppingRules[e.name]
	if !ok {
		return field.ErrorList{field.NotSupported(path.Child("algorithmName"), e.name, sortedNames(earlyStoppingRules))}
	}
	return validateSettings(e.name, e.settings, rules, nil, path)
}

// intSetting returns an integer setting or def.
func intSetting(settings []setting, name string, def int) int {
	for _, s := range settings {
		if s.name == name {
			if n, err := strconv.Atoi(s.value); err == nil {
				return n
			}
		}
	}
	return def
}

func (e EarlyStopping) katib() *common.EarlyStoppingSpec {
	spec := &common.EarlyStoppingSpec{AlgorithmName: e.name}
	for _, s := range e.settings {
		spec.AlgorithmSettings = append(spec.AlgorithmSettings, common.EarlyStoppingSetting{Name: s.name, Value: s.value})
	}
	return spec
}
