package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
)

// katibMetricFormat is Katib's default metrics format for the StdOut
// collector (DefaultFilter in pkg/metricscollector/v1beta1/common/const.go,
// Katib v0.19.0): the first group names a metric, the second is its value.
var katibMetricFormat = regexp.MustCompile(`([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)`)

// RunCommand runs the study with every trial a local process: argv, in
// which Ref placeholders are replaced by the trial's values, then each Arg
// placement's flag and value appended, with each Env placement set in its
// environment over the caller's. The process runs as a container step of a
// one-step pipeline on pipeline's local runner (in the caller's working
// directory; its log under the trial's run directory, beside the study
// file or in a temporary directory removed after Run).
//
// The process prints its metrics as Katib's StdOut collector reads them:
// name=value in Katib's default format, anywhere in its output (stdout and
// stderr, which the runner logs together). Each value of the objective
// metric is reported to the trial as it is printed, so early stopping
// sees it and a stopped trial's process is killed; the trial's value is
// the best of them, as Katib's default metric strategy (min when
// minimising, max when maximising). A process that exits non-zero, or
// prints no value of the objective, fails its trial.
func (l *Local) RunCommand(ctx context.Context, argv []string, places ...Placement) (*Result, error) {
	errs := l.validateList()
	path := field.NewPath("command")
	if len(argv) == 0 || argv[0] == "" {
		errs = append(errs, field.Required(path.Index(0), "the command needs a program to run"))
	}
	if l != nil {
		errs = append(errs, l.validatePlacements(strings.Join(argv, "\x00"), places)...)
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	argv = slices.Clone(argv)
	places = slices.Clone(places)
	return l.runSteps(ctx, func(t *Trial) pipeline.Step {
		values := t.Values()
		args := make([]string, 0, len(argv))
		for _, a := range argv {
			args = append(args, substitute(a, values, false))
		}
		step := pipeline.Container("trial")
		for _, pl := range places {
			switch {
			case pl.flag != "":
				args = append(args, pl.flag, values[pl.param])
			case pl.env != "":
				step.Env(pl.env, values[pl.param])
			}
		}
		return step.Command(args...)
	})
}

// validatePlacements checks that every placement names a parameter and
// places it, that text (the command) references only parameters, and that
// every parameter reaches the trial.
func (l *Local) validatePlacements(text string, places []Placement) field.ErrorList {
	var errs field.ErrorList
	reached := map[string]bool{}
	has := func(name string) bool {
		return slices.ContainsFunc(l.params, func(p Param) bool { return p.name == name })
	}
	for i, pl := range places {
		pp := field.NewPath("placements").Index(i)
		switch {
		case !has(pl.param):
			errs = append(errs, field.Invalid(pp.Child("param"), pl.param, "is not a parameter of the study"))
			continue
		case pl.flag == "" && pl.env == "":
			errs = append(errs, field.Required(pp, "build placements with Arg or Env"))
			continue
		case pl.env != "" && !envName.MatchString(pl.env):
			errs = append(errs, field.Invalid(pp.Child("env"), pl.env, "must be a C identifier"))
			continue
		}
		reached[pl.param] = true
	}
	for _, m := range placeholder.FindAllStringSubmatch(text, -1) {
		if !has(m[1]) {
			errs = append(errs, field.Invalid(field.NewPath("command"), m[0], fmt.Sprintf("references %q, which is not a parameter", m[1])))
		}
		reached[m[1]] = true
	}
	for i, p := range l.params {
		if p.name != "" && !reached[p.name] {
			errs = append(errs, field.Invalid(field.NewPath("parameters").Index(i).Child("name"), p.name,
				"reaches no trial: place it with tune.Arg, tune.Env or tune.Ref"))
		}
	}
	return errs
}

// substitute replaces ${trialParameters.x} placeholders by values, as
// Katib does (plain text replacement), JSON-escaped inside JSON text.
func substitute(text string, values map[string]string, inJSON bool) string {
	return placeholder.ReplaceAllStringFunc(text, func(m string) string {
		v := values[placeholder.FindStringSubmatch(m)[1]]
		if inJSON {
			b, _ := json.Marshal(v) // a string always marshals
			return string(b[1 : len(b)-1])
		}
		return v
	})
}

// RunWorkload runs the study with every trial the workload w, its
// parameters placed as an Experiment places them (Arg, Env, Ref; w must be
// a trial an Experiment can run), run by pipeline's local runner as a
// workload step: its job's main container's command once as a local
// process. Metrics, values and failures are read as RunCommand reads them.
func (l *Local) RunWorkload(ctx context.Context, w cube.Workload, places ...Placement) (*Result, error) {
	errs := l.validateList()
	if l != nil && w == nil {
		errs = append(errs, field.Required(field.NewPath("trial"), "the trial workload is nil"))
	}
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	e := New("local").Objective(l.objective).Param(l.params...).Trial(w, places...)
	if objs, err := w.Objects(); err == nil {
		for _, o := range objs {
			if o != nil && o.GetNamespace() != "" {
				e.Namespace(o.GetNamespace())
				break
			}
		}
	}
	rt, errs := e.renderTrial(field.NewPath("trial"))
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	template, err := json.Marshal(rt.spec.Object)
	if err != nil {
		return nil, fmt.Errorf("run local study: %w", err)
	}
	return l.runSteps(ctx, func(t *Trial) pipeline.Step {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(substitute(string(template), t.Values(), true)), &u.Object); err != nil {
			return pipeline.Workload("trial", cube.WorkloadFunc(func() ([]client.Object, error) { return nil, err }))
		}
		u.SetName(fmt.Sprintf("trial-%d", t.Number))
		return pipeline.Workload("trial", cube.Objects(append([]client.Object{u}, rt.shared...)...))
	})
}

// runSteps runs the study with each trial the one step that step builds.
func (l *Local) runSteps(ctx context.Context, step func(t *Trial) pipeline.Step) (*Result, error) {
	var base string
	if l.studyPath != nil {
		base = *l.studyPath + ".trials"
	} else {
		dir, err := os.MkdirTemp("", "cube-tune-")
		if err != nil {
			return nil, fmt.Errorf("run local study: %w", err)
		}
		defer os.RemoveAll(dir)
		base = dir
	}
	return l.Run(ctx, func(ctx context.Context, t *Trial) (float64, error) {
		return l.runStep(ctx, t, step(t), filepath.Join(base, fmt.Sprintf("trial-%d", t.Number)))
	})
}

// runStep runs step as a one-step pipeline in dir, reporting every value
// of the objective it prints to t as it prints it, and stopping it when t
// is stopped.
func (l *Local) runStep(ctx context.Context, t *Trial, step pipeline.Step, dir string) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logs := make(chan string, 1)
	finished := make(chan struct{})
	type outcome struct {
		values []float64
		pruned bool
	}
	tailed := make(chan outcome, 1)
	go func() {
		var out outcome
		var f *os.File
		var rest string
		read := func() {
			if f == nil {
				select {
				case path := <-logs:
					f, _ = os.Open(path) // not there yet: read at the next tick
					if f == nil {
						logs <- path
						return
					}
				default:
					return
				}
			}
			b, _ := io.ReadAll(f)
			lines := strings.Split(rest+string(b), "\n")
			rest = lines[len(lines)-1]
			for _, line := range lines[:len(lines)-1] {
				for _, v := range l.metricValues(line) {
					out.values = append(out.values, v)
					if !out.pruned && errors.Is(t.Report(v), ErrPruned) {
						out.pruned = true
						cancel()
					}
				}
			}
		}
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-finished:
				read()
				if f != nil {
					rest += "\n" // the last line, unterminated
					read()
					f.Close()
				}
				tailed <- out
				return
			case <-tick.C:
				read()
			}
		}
	}()
	res, err := pipeline.New(fmt.Sprintf("trial-%d", t.Number)).Step(step).Run(ctx,
		pipeline.RunDir(dir), pipeline.NoCache, pipeline.Parallelism(1), pipeline.Progress(nil),
		pipeline.OnEvent(func(ev pipeline.Event) {
			if ev.Type == pipeline.EventStarted && ev.Log != "" {
				select {
				case logs <- ev.Log:
				default:
				}
			}
		}))
	close(finished)
	out := <-tailed
	switch {
	case out.pruned:
		return 0, ErrPruned
	case err != nil:
		return 0, fmt.Errorf("trial %d: %w", t.Number, err)
	case res.Phase != cube.Succeeded:
		for _, s := range res.Steps {
			if s.Err != nil {
				return 0, fmt.Errorf("trial %d: %w", t.Number, s.Err)
			}
		}
		return 0, fmt.Errorf("trial %d: the step %s", t.Number, res.Phase)
	case len(out.values) == 0:
		return 0, fmt.Errorf("trial %d printed no value of %s (as %s=<number>)", t.Number, l.objective.metric, l.objective.metric)
	}
	best := out.values[0]
	for _, v := range out.values[1:] {
		if l.objective.better(v, best) {
			best = v
		}
	}
	return best, nil
}

// metricValues returns the values of the objective metric in a line.
func (l *Local) metricValues(line string) []float64 {
	var out []float64
	for _, m := range katibMetricFormat.FindAllStringSubmatch(line, -1) {
		if strings.TrimSpace(m[1]) != l.objective.metric {
			continue
		}
		if v, err := strconv.ParseFloat(strings.TrimSpace(m[2]), 64); err == nil {
			out = append(out, v)
		}
	}
	return out
}
