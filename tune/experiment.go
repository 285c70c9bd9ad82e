package tune

import (
	"fmt"
	"maps"
	"slices"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/pod"
)

// ResumePolicy says what Katib keeps of a finished experiment so that it can
// be resumed by raising MaxTrials.
type ResumePolicy = katibv1beta1.ResumePolicyType

// The resume policies of Katib v0.19.0.
const (
	NeverResume = katibv1beta1.NeverResume // the suggestion is deleted (Katib's default)
	LongRunning = katibv1beta1.LongRunning // the suggestion keeps running
	FromVolume  = katibv1beta1.FromVolume  // the suggestion's state is kept in a PVC
)

// maxNameLength is Katib's limit on experiment names
// (pkg/webhook/v1beta1/experiment/validator).
const maxNameLength = 40

// Experiment builds a Katib Experiment: a search space, an objective, an
// algorithm and a trial workload. Chained methods never fail; Build and
// Objects report every problem at once.
type Experiment struct {
	pod.Meta[Experiment]
	objective        Objective
	algorithm        *Algorithm
	earlyStopping    *EarlyStopping
	collector        Collector
	params           []Param
	trial            cube.Workload
	placements       []Placement
	primaryContainer string
	primaryLabels    map[string]string
	success, failure string
	parallel         *int
	maxTrials        *int
	maxFailed        *int
	resume           ResumePolicy
	retain           bool
}

// New starts an experiment named name (at most 40 characters, Katib's
// limit), searching with the algorithm Auto maps its space and budget to
// until Algorithm says otherwise.
func New(name string) *Experiment {
	e := &Experiment{}
	podspec.Of(&e.Handle).InitMeta(e, "experiment", name)
	return e
}

// Objective sets the metric to optimise (replaces).
func (e *Experiment) Objective(o Objective) *Experiment {
	if e == nil {
		return nil
	}
	e.objective = o
	return e
}

// Algorithm sets the search algorithm (replaces; default Auto, which
// renders the Katib algorithm Algorithm.Plan names).
func (e *Experiment) Algorithm(a Algorithm) *Experiment {
	if e == nil {
		return nil
	}
	a.settings = slices.Clone(a.settings)
	e.algorithm = &a
	return e
}

// EarlyStop stops trials that fall behind (replaces).
func (e *Experiment) EarlyStop(s EarlyStopping) *Experiment {
	if e == nil {
		return nil
	}
	s.settings = slices.Clone(s.settings)
	e.earlyStopping = &s
	return e
}

// Collect sets how Katib reads the trials' metrics (replaces; default
// StdOut).
func (e *Experiment) Collect(c Collector) *Experiment {
	if e == nil {
		return nil
	}
	e.collector = c
	return e
}

// Param appends parameters to the search space.
func (e *Experiment) Param(params ...Param) *Experiment {
	if e == nil {
		return nil
	}
	for _, p := range params {
		p.choices, p.values = slices.Clone(p.choices), slices.Clone(p.values)
		e.params = append(e.params, p)
	}
	return e
}

// Trial sets the workload each trial runs and where parameters reach it
// (replaces both: a second call keeps none of the first call's placements). The workload renders one trial object (a batch Job,
// PyTorchJob, TFJob, MPIJob, XGBoostJob, or another kind the Katib
// controller lists in its trialResources) and may render ConfigMaps and
// Secrets beside it, which every trial shares. Its name and namespace are
// dropped: Katib names each trial's object after the trial.
func (e *Experiment) Trial(w cube.Workload, places ...Placement) *Experiment {
	if e == nil {
		return nil
	}
	e.trial = w
	e.placements = slices.Clone(places)
	return e
}

// PrimaryContainer names the container whose output carries the metrics,
// for kinds cube does not know or to override its default.
func (e *Experiment) PrimaryContainer(name string) *Experiment {
	if e == nil {
		return nil
	}
	e.primaryContainer = name
	return e
}

// PrimaryPodLabels selects the pods Katib collects metrics from (replaces
// the kind's default; the map is copied).
func (e *Experiment) PrimaryPodLabels(labels map[string]string) *Experiment {
	if e == nil {
		return nil
	}
	e.primaryLabels = maps.Clone(labels)
	if e.primaryLabels == nil {
		e.primaryLabels = map[string]string{}
	}
	return e
}

// Conditions sets when a trial object has succeeded and failed, as gjson
// paths on the object (Katib's successCondition and failureCondition), for
// kinds cube does not know or to override its default.
func (e *Experiment) Conditions(success, failure string) *Experiment {
	if e == nil {
		return nil
	}
	e.success, e.failure = success, failure
	return e
}

// Parallelism sets how many trials run at once (Katib's
// parallelTrialCount; its default is 3).
func (e *Experiment) Parallelism(n int) *Experiment {
	if e == nil {
		return nil
	}
	e.parallel = &n
	return e
}

// MaxTrials sets how many trials the search runs at most.
func (e *Experiment) MaxTrials(n int) *Experiment {
	if e == nil {
		return nil
	}
	e.maxTrials = &n
	return e
}

// MaxFailedTrials sets how many trials may fail before the experiment fails.
func (e *Experiment) MaxFailedTrials(n int) *Experiment {
	if e == nil {
		return nil
	}
	e.maxFailed = &n
	return e
}

// Resume sets the resume policy.
func (e *Experiment) Resume(p ResumePolicy) *Experiment {
	if e == nil {
		return nil
	}
	e.resume = p
	return e
}

// RetainTrials keeps each trial's object and pods after it completes.
func (e *Experiment) RetainTrials() *Experiment {
	if e == nil {
		return nil
	}
	e.retain = true
	return e
}

// space returns a copy of the search space, which the local tuner shares.
func (e *Experiment) space() []Param {
	if e == nil {
		return nil
	}
	return slices.Clone(e.params)
}

// Build validates the experiment and returns the typed Katib Experiment.
func (e *Experiment) Build() (*katibv1beta1.Experiment, error) {
	exp, _, err := e.build()
	return exp, err
}

// Objects returns the ConfigMaps and Secrets the trial workload shares
// between trials, then the Experiment.
func (e *Experiment) Objects() ([]client.Object, error) {
	exp, shared, err := e.build()
	if err != nil {
		return nil, err
	}
	return append(shared, exp), nil
}

func (e *Experiment) build() (*katibv1beta1.Experiment, []client.Object, error) {
	if e == nil {
		return nil, nil, field.ErrorList{field.Required(field.NewPath("metadata", "name"), "the experiment is nil: start it with tune.New")}.ToAggregate()
	}
	spec := field.NewPath("spec")
	errs := podspec.Of(&e.Handle).ValidateServiceMeta(maxNameLength) // Katib: ^[a-z]([-a-z0-9]*[a-z0-9])?, at most 40 (pkg/webhook/v1beta1/experiment/validator)
	errs = append(errs, e.objective.validate(spec.Child("objective"))...)
	errs = append(errs, validateSpace(e.params, spec.Child("parameters"))...)

	for _, c := range []struct {
		name string
		v    *int
		min  int
	}{{"parallelTrialCount", e.parallel, 1}, {"maxTrialCount", e.maxTrials, 1}, {"maxFailedTrialCount", e.maxFailed, 0}} {
		if c.v != nil && *c.v < c.min {
			errs = append(errs, field.Invalid(spec.Child(c.name), *c.v, fmt.Sprintf("must be at least %d", c.min)))
		}
	}
	if e.maxTrials != nil && e.parallel != nil && *e.parallel > *e.maxTrials {
		errs = append(errs, field.Invalid(spec.Child("parallelTrialCount"), *e.parallel, "must not exceed maxTrialCount"))
	}
	if e.maxTrials != nil && e.maxFailed != nil && *e.maxFailed > *e.maxTrials {
		errs = append(errs, field.Invalid(spec.Child("maxFailedTrialCount"), *e.maxFailed, "must not exceed maxTrialCount"))
	}
	switch e.resume {
	case "", NeverResume, LongRunning, FromVolume:
	default:
		errs = append(errs, field.NotSupported(spec.Child("resumePolicy"), e.resume, []ResumePolicy{NeverResume, LongRunning, FromVolume}))
	}

	algorithm := Auto()
	if e.algorithm != nil {
		algorithm = *e.algorithm
	}
	// Counts are ints in cube's API and int32 in Katib's.
	count32 := func(name string, v *int) *int32 {
		if v == nil {
			return nil
		}
		n, err := podspec.Int32(spec.Child(name), *v)
		if err != nil {
			errs = append(errs, err)
		}
		return &n
	}
	parallel32, maxTrials32, maxFailed32 := count32("parallelTrialCount", e.parallel), count32("maxTrialCount", e.maxTrials), count32("maxFailedTrialCount", e.maxFailed)
	parallel, maxTrials := int32(katibv1beta1.DefaultTrialParallelCount), int32(0)
	if parallel32 != nil {
		parallel = *parallel32
	}
	if maxTrials32 != nil {
		maxTrials = *maxTrials32
	}
	if algorithm.name == AlgorithmAuto {
		// Auto renders the Katib algorithm it maps to.
		errs = append(errs, validateSettings(AlgorithmAuto, algorithm.settings, autoRules, nil, spec.Child("algorithm"))...)
		algorithm = planFor(e.params, int(maxTrials), int(parallel), algorithm).Katib
	}
	errs = append(errs, algorithm.validate(spec.Child("algorithm"), e.params, parallel, maxTrials,
		spec.Child("parallelTrialCount"), spec.Child("maxTrialCount"))...)
	if e.earlyStopping != nil {
		errs = append(errs, e.earlyStopping.validate(spec.Child("earlyStopping"))...)
	}
	errs = append(errs, e.collector.validate(spec.Child("metricsCollectorSpec"))...)
	resume := e.resume
	if algorithm.name == AlgorithmPBT {
		// The pod webhook mounts the suggestion's PVC into every trial when
		// suggestion_trial_dir is set (pkg/webhook/v1beta1/pod/inject_webhook.go:178,
		// mutateSuggestionVolume), and the suggestion controller creates that
		// PVC only under FromVolume (pkg/controller.v1beta1/suggestion/suggestion_controller.go:197-209):
		// under another policy the trials wait for a claim that never comes.
		switch resume {
		case "":
			resume = FromVolume
		case FromVolume:
		default:
			errs = append(errs, field.Invalid(spec.Child("resumePolicy"), resume,
				"PBT needs FromVolume: Katib's pod webhook mounts the suggestion's PVC into every trial, and the PVC exists only under FromVolume (pkg/webhook/v1beta1/pod/inject_webhook.go, mutateSuggestionVolume)"))
		}
		if e.collector.kind == common.PushCollector {
			// inject_webhook.go:166 returns before mutateSuggestionVolume.
			errs = append(errs, field.Invalid(spec.Child("metricsCollectorSpec", "collector", "kind"), e.collector.kind,
				"PBT trials share checkpoints through the suggestion's PVC, which Katib's pod webhook does not mount under the Push collector (pkg/webhook/v1beta1/pod/inject_webhook.go:166)"))
		}
	}

	trial, trialErrs := e.renderTrial(spec.Child("trialTemplate", "trialSpec"))
	errs = append(errs, trialErrs...)
	if len(errs) > 0 {
		return nil, nil, errs.ToAggregate()
	}

	exp := &katibv1beta1.Experiment{
		TypeMeta:   metav1.TypeMeta{APIVersion: katibv1beta1.SchemeGroupVersion.String(), Kind: "Experiment"},
		ObjectMeta: podspec.Of(&e.Handle).ObjectMeta(podspec.Of(&e.Handle).Name()),
		Spec: katibv1beta1.ExperimentSpec{
			Objective:            e.objective.katib(),
			Algorithm:            algorithm.katib(),
			ParallelTrialCount:   parallel32,
			MaxTrialCount:        maxTrials32,
			MaxFailedTrialCount:  maxFailed32,
			MetricsCollectorSpec: e.collector.katib(),
			ResumePolicy:         resume,
			TrialTemplate: &katibv1beta1.TrialTemplate{
				Retain:               e.retain,
				TrialSource:          katibv1beta1.TrialSource{TrialSpec: trial.spec},
				TrialParameters:      []katibv1beta1.TrialParameterSpec{},
				PrimaryPodLabels:     trial.labels,
				PrimaryContainerName: trial.container,
				SuccessCondition:     trial.success,
				FailureCondition:     trial.failure,
			},
		},
	}
	if e.earlyStopping != nil {
		exp.Spec.EarlyStopping = e.earlyStopping.katib()
	}
	for _, p := range e.params {
		exp.Spec.Parameters = append(exp.Spec.Parameters, p.katib())
	}
	for _, name := range trial.refs {
		exp.Spec.TrialTemplate.TrialParameters = append(exp.Spec.TrialTemplate.TrialParameters,
			katibv1beta1.TrialParameterSpec{Name: name, Reference: name, Description: "search parameter " + name})
	}
	shared := make([]client.Object, 0, len(trial.shared)+1)
	for _, o := range trial.shared {
		o.SetNamespace(podspec.Of(&e.Handle).NamespaceName())
		shared = append(shared, o)
	}
	return exp, shared, nil
}
