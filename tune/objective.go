package tune

import (
	"math"
	"slices"
	"strings"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Objective is the metric a search optimises, its direction, an optional
// goal that ends the search once reached, and additional metrics recorded
// with every trial. It is a value: Goal and Also return a modified copy.
type Objective struct {
	metric   string
	maximize bool
	set      bool
	goal     *float64
	also     []string
}

// Maximize searches for the largest value of metric.
func Maximize(metric string) Objective { return Objective{metric: metric, maximize: true, set: true} }

// Minimize searches for the smallest value of metric.
func Minimize(metric string) Objective { return Objective{metric: metric, set: true} }

// Goal ends the search once a trial reaches value (at least value when
// maximising, at most when minimising).
func (o Objective) Goal(value float64) Objective { o.goal = &value; return o }

// Also records additional metrics with every trial (appends).
func (o Objective) Also(metrics ...string) Objective {
	o.also = append(slices.Clone(o.also), metrics...)
	return o
}

// Metric returns the objective metric's name.
func (o Objective) Metric() string { return o.metric }

// Maximizing reports whether larger values are better.
func (o Objective) Maximizing() bool { return o.maximize }

// better reports whether a beats b in the objective's direction.
// minimised is v on the scale where lower is better.
func (o Objective) minimised(v float64) float64 {
	if o.maximize {
		return -v
	}
	return v
}

func (o Objective) better(a, b float64) bool {
	if o.maximize {
		return a > b
	}
	return a < b
}

// reached reports whether value meets the goal.
func (o Objective) reached(value float64) bool {
	if o.goal == nil {
		return false
	}
	if o.maximize {
		return value >= *o.goal
	}
	return value <= *o.goal
}

func validMetricName(path *field.Path, name string) field.ErrorList {
	switch {
	case name == "":
		return field.ErrorList{field.Required(path, "a metric name is required")}
	case strings.ContainsAny(name, " \t\n=:"):
		// Katib's default StdOut and File filters read "name=value" and
		// "name: value" lines, so a metric name cannot hold these.
		return field.ErrorList{field.Invalid(path, name, "must not contain whitespace, '=' or ':'")}
	}
	return nil
}

func (o Objective) validate(path *field.Path) field.ErrorList {
	if !o.set {
		return field.ErrorList{field.Required(path, "set an objective with Maximize or Minimize")}
	}
	errs := validMetricName(path.Child("objectiveMetricName"), o.metric)
	if o.goal != nil && (math.IsNaN(*o.goal) || math.IsInf(*o.goal, 0)) {
		errs = append(errs, field.Invalid(path.Child("goal"), *o.goal, "must be finite"))
	}
	seen := map[string]bool{}
	for i, m := range o.also {
		p := path.Child("additionalMetricNames").Index(i)
		errs = append(errs, validMetricName(p, m)...)
		switch {
		case m == o.metric && m != "":
			errs = append(errs, field.Invalid(p, m, "is the objective metric already"))
		case seen[m]:
			errs = append(errs, field.Duplicate(p, m))
		}
		seen[m] = true
	}
	return errs
}

func (o Objective) katib() *common.ObjectiveSpec {
	spec := &common.ObjectiveSpec{
		Type:                  common.ObjectiveTypeMinimize,
		ObjectiveMetricName:   o.metric,
		AdditionalMetricNames: slices.Clone(o.also),
	}
	if o.maximize {
		spec.Type = common.ObjectiveTypeMaximize
	}
	if o.goal != nil {
		g := *o.goal
		spec.Goal = &g
	}
	return spec
}
