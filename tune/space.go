package tune

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	katibv1beta1 "github.com/kubeflow/katib/pkg/apis/controller/experiments/v1beta1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ParamKind is the type of a search-space dimension.
type ParamKind int

// The kinds of parameters, one per Katib parameterType.
const (
	FloatKind    ParamKind = iota + 1 // Katib "double"
	IntKind                           // Katib "int"
	ChoiceKind                        // Katib "categorical"
	DiscreteKind                      // Katib "discrete"
)

// Param is one dimension of a search space. It is a value: Log and Step
// return a modified copy. Build parameters with Float, Int, Choice and
// Discrete; the zero Param is invalid and reported as such.
type Param struct {
	name     string
	kind     ParamKind
	min, max float64
	step     float64
	log      bool
	choices  []string
	values   []float64
}

// Float is a real parameter in [min, max], sampled uniformly unless Log is
// set.
func Float(name string, min, max float64) Param {
	return Param{name: name, kind: FloatKind, min: min, max: max}
}

// Int is an integer parameter in [min, max], both included.
func Int(name string, min, max int) Param {
	return Param{name: name, kind: IntKind, min: float64(min), max: float64(max)}
}

// Choice is a categorical parameter taking one of values. A value may not
// hold '"', '\' or control characters: Katib puts it into the trial's JSON
// unescaped.
func Choice(name string, values ...string) Param {
	return Param{name: name, kind: ChoiceKind, choices: slices.Clone(values)}
}

// Discrete is a numeric parameter taking one of values (Katib "discrete"):
// ordered, unlike a Choice.
func Discrete(name string, values ...float64) Param {
	return Param{name: name, kind: DiscreteKind, values: slices.Clone(values)}
}

// Log samples a Float or Int on a log scale (Katib's logUniform
// distribution). Both bounds must be positive.
func (p Param) Log() Param { p.log = true; return p }

// Step sets the spacing of a Float or Int: the values are min, min+step, ...
// up to max. Katib's grid search needs a step on every Float (Ints default
// to 1).
func (p Param) Step(step float64) Param { p.step = step; return p }

// Name returns the parameter's name.
func (p Param) Name() string { return p.name }

// Kind returns the parameter's kind (0 for the zero Param).
func (p Param) Kind() ParamKind { return p.kind }

// paramName is what a parameter name may be: it names a
// ${trialParameters.<name>} placeholder that Katib substitutes by plain
// text replacement, and an environment variable suffix in local runs.
var paramName = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// validate checks one parameter; path is the parameter's own path.
func (p Param) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case p.name == "":
		errs = append(errs, field.Required(path.Child("name"), "a parameter needs a name"))
	case !paramName.MatchString(p.name):
		errs = append(errs, field.Invalid(path.Child("name"), p.name,
			"must start with a letter and hold only letters, digits, '-' and '_' (it names a ${trialParameters.x} placeholder)"))
	}
	space := path.Child("feasibleSpace")
	switch p.kind {
	case FloatKind, IntKind:
		if math.IsNaN(p.min) || math.IsInf(p.min, 0) {
			errs = append(errs, field.Invalid(space.Child("min"), p.min, "must be finite"))
		}
		if math.IsNaN(p.max) || math.IsInf(p.max, 0) {
			errs = append(errs, field.Invalid(space.Child("max"), p.max, "must be finite"))
		}
		if p.kind == IntKind {
			// An Int is held as a float64: beyond 2^53 its bounds round
			// (Int(0, 1<<62+1) rendered max 4611686018427387904) and the
			// local samplers' int conversion overflows.
			for _, b := range []struct {
				name string
				v    float64
			}{{"min", p.min}, {"max", p.max}} {
				if math.Abs(b.v) > maxExactInt {
					errs = append(errs, field.Invalid(space.Child(b.name), int64(b.v), "must be within ±2^53 (9007199254740992)"))
				}
			}
		}
		if p.min > p.max {
			errs = append(errs, field.Invalid(space.Child("max"), p.max, fmt.Sprintf("must not be below min (%s)", formatFloat(p.min))))
		}
		if p.log && p.min <= 0 {
			errs = append(errs, field.Invalid(space.Child("min"), p.min, "a log-scaled parameter needs a positive min"))
		}
		if p.step != 0 {
			switch {
			case math.IsNaN(p.step) || math.IsInf(p.step, 0) || p.step < 0:
				errs = append(errs, field.Invalid(space.Child("step"), p.step, "must be a positive finite number"))
			case p.kind == IntKind && p.step != math.Trunc(p.step):
				errs = append(errs, field.Invalid(space.Child("step"), p.step, "an Int's step must be a whole number"))
			case p.max > p.min && p.step > p.max-p.min:
				errs = append(errs, field.Invalid(space.Child("step"), p.step, "is wider than the range max-min"))
			}
			if p.log {
				errs = append(errs, field.Invalid(space.Child("step"), p.step, "a log-scaled parameter cannot also have a step"))
			}
		}
	case ChoiceKind:
		if p.log || p.step != 0 {
			errs = append(errs, field.Invalid(space, p.name, "a Choice takes neither Log nor Step"))
		}
		if len(p.choices) == 0 {
			errs = append(errs, field.Required(space.Child("list"), "a Choice needs at least one value"))
		}
		seen := map[string]bool{}
		for i, v := range p.choices {
			switch {
			case v == "":
				errs = append(errs, field.Invalid(space.Child("list").Index(i), v, "must not be empty"))
			case strings.ContainsFunc(v, needsJSONEscape):
				// Katib marshals the trial spec to JSON and replaces each
				// placeholder with the raw value (manifest/generator.go,
				// applyParameters): a quote or backslash breaks the trial's
				// JSON, or adds fields to it.
				errs = append(errs, field.Invalid(space.Child("list").Index(i), v,
					`must not hold '"', '\' or control characters: Katib substitutes values into the trial's JSON unescaped`))
			case placeholder.MatchString(v):
				errs = append(errs, field.Invalid(space.Child("list").Index(i), v, "must not hold a ${trialParameters.x} placeholder"))
			case seen[v]:
				errs = append(errs, field.Duplicate(space.Child("list").Index(i), v))
			}
			seen[v] = true
		}
	case DiscreteKind:
		if p.log || p.step != 0 {
			errs = append(errs, field.Invalid(space, p.name, "a Discrete takes neither Log nor Step"))
		}
		if len(p.values) == 0 {
			errs = append(errs, field.Required(space.Child("list"), "a Discrete needs at least one value"))
		}
		seen := map[float64]bool{}
		for i, v := range p.values {
			switch {
			case math.IsNaN(v) || math.IsInf(v, 0):
				errs = append(errs, field.Invalid(space.Child("list").Index(i), v, "must be finite"))
			case seen[v]:
				errs = append(errs, field.Duplicate(space.Child("list").Index(i), v))
			}
			seen[v] = true
		}
	default:
		errs = append(errs, field.Invalid(path.Child("parameterType"), p.name, "build parameters with Float, Int, Choice or Discrete"))
	}
	return errs
}

// validateSpace checks every parameter and that names are unique.
func validateSpace(params []Param, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(params) == 0 {
		return append(errs, field.Required(path, "at least one parameter is required"))
	}
	seen := map[string]bool{}
	for i, p := range params {
		errs = append(errs, p.validate(path.Index(i))...)
		if p.name != "" && seen[p.name] {
			errs = append(errs, field.Duplicate(path.Index(i).Child("name"), p.name))
		}
		seen[p.name] = true
	}
	return errs
}

// katib renders the parameter as Katib's ParameterSpec.
func (p Param) katib() katibv1beta1.ParameterSpec {
	spec := katibv1beta1.ParameterSpec{Name: p.name}
	switch p.kind {
	case FloatKind:
		spec.ParameterType = katibv1beta1.ParameterTypeDouble
		spec.FeasibleSpace = katibv1beta1.FeasibleSpace{Min: formatFloat(p.min), Max: formatFloat(p.max)}
	case IntKind:
		// Integer text: goptuna reads an Int's bounds and step with
		// strconv.Atoi (goptuna/converter.go:141-157), optuna, skopt and
		// hyperband with Python's int(), and both refuse formatFloat's
		// "1e+06".
		spec.ParameterType = katibv1beta1.ParameterTypeInt
		spec.FeasibleSpace = katibv1beta1.FeasibleSpace{Min: formatInt(p.min), Max: formatInt(p.max)}
	case ChoiceKind:
		spec.ParameterType = katibv1beta1.ParameterTypeCategorical
		spec.FeasibleSpace = katibv1beta1.FeasibleSpace{List: slices.Clone(p.choices)}
	case DiscreteKind:
		spec.ParameterType = katibv1beta1.ParameterTypeDiscrete
		list := make([]string, len(p.values))
		for i, v := range p.values {
			// Whole values as integer text: hyperband reads them with int()
			// (hyperband/parsing_util.py:61), and the trial gets the text.
			list[i] = formatNumber(v)
		}
		spec.FeasibleSpace = katibv1beta1.FeasibleSpace{List: list}
	}
	if p.kind == FloatKind || p.kind == IntKind {
		if p.step != 0 {
			spec.FeasibleSpace.Step = formatFloat(p.step)
			if p.kind == IntKind {
				spec.FeasibleSpace.Step = formatInt(p.step)
			}
		}
		spec.FeasibleSpace.Distribution = katibv1beta1.DistributionUniform
		if p.log {
			spec.FeasibleSpace.Distribution = katibv1beta1.DistributionLogUniform
		}
	}
	return spec
}

// gridSize is the number of points of p on a grid, or 0 when p has none
// (a Float without a step).
func (p Param) gridSize() int {
	switch p.kind {
	case ChoiceKind:
		return len(p.choices)
	case DiscreteKind:
		return len(p.values)
	case IntKind:
		step := p.step
		if step == 0 {
			step = 1
		}
		return gridPoints(math.Floor((p.max-p.min)/step) + 1)
	case FloatKind:
		if p.step == 0 {
			return 0
		}
		// A small tolerance so that 0.1 steps from 0 to 1 keep the end point,
		// as numpy.arange with the max+step bound in Katib's grid does.
		return gridPoints(math.Floor((p.max-p.min)/p.step+1e-9) + 1)
	}
	return 0
}

// maxExactInt is the largest magnitude an Int's bounds may have: float64
// holds every integer up to it exactly.
const maxExactInt = 1 << 53

// maxGridPoints bounds a parameter's grid: a float's int conversion is
// undefined beyond int's range (a range of 1e300 in steps of 1 was a
// negative count).
const maxGridPoints = 1 << 40

func gridPoints(n float64) int {
	if n != n || n > maxGridPoints {
		return maxGridPoints
	}
	return max(int(n), 1)
}

// needsJSONEscape reports whether r must be escaped in a JSON string.
func needsJSONEscape(r rune) bool { return r == '"' || r == '\\' || r < 0x20 }

// formatFloat prints a float the shortest way that parses back exactly.
func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// formatInt prints a whole float as integer text ("1000000", not "1e+06").
// An Int's bounds and step are whole: Int takes ints, Step checks.
func formatInt(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

// formatNumber prints whole values as integer text and others the shortest
// way.
func formatNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return formatInt(v)
	}
	return formatFloat(v)
}

// adjacent returns p's values one step from v on its grid, below and
// above, within the range; for a Choice its other values; none for a Float
// without Step, which has no grid.
func (p Param) adjacent(v any) []any {
	var out []any
	switch p.kind {
	case ChoiceKind:
		for _, c := range p.choices {
			if c != v {
				out = append(out, c)
			}
		}
	case DiscreteKind:
		f, _ := v.(float64)
		if k := slices.Index(p.values, f); k >= 0 {
			for _, j := range []int{k - 1, k + 1} {
				if j >= 0 && j < len(p.values) {
					out = append(out, p.values[j])
				}
			}
		}
	case IntKind, FloatKind:
		n := p.gridSize()
		if n == 0 {
			return nil
		}
		step, x := p.step, 0.0
		if step == 0 {
			step = 1
		}
		switch v := v.(type) {
		case int:
			x = float64(v)
		case float64:
			x = v
		}
		k := int(math.Round((x - p.min) / step))
		for _, j := range []int{k - 1, k + 1} {
			if j >= 0 && j < n {
				out = append(out, p.snap(p.min+float64(j)*step))
			}
		}
	}
	return out
}
