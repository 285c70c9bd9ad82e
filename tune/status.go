package tune

import (
	"fmt"
	"strconv"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/cubestudio/cube"
)

// ExperimentKind is the group and kind of Katib's Experiment.
var ExperimentKind = schema.GroupKind{Group: katibv1beta1.SchemeGroupVersion.Group, Kind: "Experiment"}

// Kinds returns how a cube.Client reads an Experiment (cube.Kinds),
// so that Release.Wait ends when Katib marks it Succeeded or Failed.
func Kinds() []cube.Kind {
	return []cube.Kind{{GroupKind: ExperimentKind, Status: cube.TypedStatus(ExperimentStatus), Completes: true}}
}

// ExperimentStatus reads an Experiment's phase from Katib's conditions:
// Succeeded and Failed end it, the rest is in progress, with the trial
// counts as the message.
func ExperimentStatus(e *katibv1beta1.Experiment) cube.ObjectStatus {
	if e == nil {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "no experiment"}
	}
	p := ProgressOf(e)
	msg := fmt.Sprintf("%d trials: %d running, %d succeeded, %d failed, %d early-stopped",
		p.Trials, p.Running, p.Succeeded, p.Failed, p.EarlyStopped)
	var latest *katibv1beta1.ExperimentCondition
	for i := range e.Status.Conditions {
		c := &e.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case katibv1beta1.ExperimentSucceeded:
			return cube.ObjectStatus{Phase: cube.Succeeded, Reason: reasonOr(c.Reason, string(c.Type)), Message: msg}
		case katibv1beta1.ExperimentFailed:
			return cube.ObjectStatus{Phase: cube.Failed, Reason: reasonOr(c.Reason, string(c.Type)), Message: reasonOr(c.Message, msg)}
		}
		latest = c
	}
	if latest == nil {
		return cube.ObjectStatus{Phase: cube.InProgress, Reason: "Pending", Message: "Katib has not reported on the experiment yet"}
	}
	return cube.ObjectStatus{Phase: cube.InProgress, Reason: string(latest.Type), Message: msg}
}

func reasonOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// Progress is where an Experiment's search stands.
type Progress struct {
	Trials, Pending, Running, Succeeded, Failed, EarlyStopped, Killed int32
	// Optimal is the best trial so far; nil before any trial reported.
	Optimal *Optimum
}

// Optimum is a trial's parameter assignments and metrics as Katib stores
// them.
type Optimum struct {
	Trial   string
	Params  map[string]string
	Metrics map[string]float64 // each metric's value by the objective's strategy (latest, min or max)
}

// Float parses a parameter as a number.
func (o *Optimum) Float(name string) (float64, error) {
	v, err := o.param(name)
	if err != nil {
		return 0, err
	}
	return strconv.ParseFloat(v, 64)
}

// Int parses a parameter as an integer.
func (o *Optimum) Int(name string) (int, error) {
	v, err := o.param(name)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(v)
}

// param returns a parameter's text. A nil Optimum is Progress.Optimal
// before any trial reported: an error, not a panic.
func (o *Optimum) param(name string) (string, error) {
	if o == nil {
		return "", fmt.Errorf("no optimal trial yet: parameter %q", name)
	}
	v, ok := o.Params[name]
	if !ok {
		return "", fmt.Errorf("optimal trial %s has no parameter %q", o.Trial, name)
	}
	return v, nil
}

// ProgressOf reads an Experiment's trial counts and its current optimal
// trial.
func ProgressOf(e *katibv1beta1.Experiment) Progress {
	if e == nil {
		return Progress{}
	}
	s := e.Status
	p := Progress{
		Trials: s.Trials, Pending: s.TrialsPending, Running: s.TrialsRunning, Succeeded: s.TrialsSucceeded,
		Failed: s.TrialsFailed, EarlyStopped: s.TrialsEarlyStopped, Killed: s.TrialsKilled,
	}
	opt := s.CurrentOptimalTrial
	if opt.BestTrialName == "" && len(opt.ParameterAssignments) == 0 {
		return p
	}
	p.Optimal = &Optimum{Trial: opt.BestTrialName, Params: map[string]string{}, Metrics: map[string]float64{}}
	for _, a := range opt.ParameterAssignments {
		p.Optimal.Params[a.Name] = a.Value
	}
	// Without a strategy a metric is read the way Katib's defaulting would
	// set it: min when minimising, max when maximising.
	strategy := map[string]string{}
	fallback := "latest"
	if o := e.Spec.Objective; o != nil {
		fallback = map[string]string{"minimize": "min", "maximize": "max"}[string(o.Type)]
		for _, m := range o.MetricStrategies {
			strategy[m.Name] = string(m.Value)
		}
	}
	for _, m := range opt.Observation.Metrics {
		raw := m.Latest
		how, ok := strategy[m.Name]
		if !ok {
			how = fallback
		}
		switch how {
		case "min":
			raw = m.Min
		case "max":
			raw = m.Max
		}
		if v, err := strconv.ParseFloat(raw, 64); err == nil {
			p.Optimal.Metrics[m.Name] = v
		}
	}
	return p
}
