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

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/proc"
)

// katibMetricFormat is Katib's default metrics format for the StdOut
// collector (DefaultFilter in pkg/metricscollector/v1beta1/common/const.go,
// Katib v0.19.0): the first group names a metric, the second is its value.
var katibMetricFormat = regexp.MustCompile(`([\w|-]+)\s*=\s*([+-]?\d*(\.\d+)?([Ee][+-]?\d+)?)`)

// RunCommand runs the study with every trial a local process: argv, in
// which Ref placeholders are replaced by the trial's values, then each Arg
// placement's flag and value appended, with each Env placement set in its
// environment over the caller's. The process runs with pipeline/proc.Run
// (in the caller's working directory, in a process group of its own that is
// killed when the trial stops; its log under the trial's run directory,
// beside the study file or in a temporary directory removed after Run).
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
	return l.runProcesses(ctx, func(t *Trial) (trialProcess, error) {
		values := t.Values()
		p := trialProcess{argv: make([]string, 0, len(argv))}
		for _, a := range argv {
			p.argv = append(p.argv, substitute(a, values, false))
		}
		for _, pl := range places {
			switch {
			case pl.flag != "":
				p.argv = append(p.argv, pl.flag, values[pl.param])
			case pl.env != "":
				p.env = append(p.env, pl.env+"="+values[pl.param])
			}
		}
		return p, nil
	})
}

// trialProcess is what a trial runs: a command line and the variables set
// in its environment over the caller's.
type trialProcess struct{ argv, env []string }

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
// a trial an Experiment can run): its job's main container's command runs
// once as a local process (internal/proc.Command finds it), with that
// container's env values (not those read from Secrets) over the caller's.
// Metrics, values and failures are read as RunCommand reads them.
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
	if argv, _ := proc.Command(rt.spec); len(argv) == 0 {
		return nil, field.ErrorList{field.Required(field.NewPath("trial"), fmt.Sprintf(
			"%s %q has no container command to run locally", rt.spec.GetKind(), rt.spec.GetName()))}.ToAggregate()
	}
	template, err := json.Marshal(rt.spec.Object)
	if err != nil {
		return nil, fmt.Errorf("run local study: %w", err)
	}
	return l.runProcesses(ctx, func(t *Trial) (trialProcess, error) {
		u := &unstructured.Unstructured{}
		if err := json.Unmarshal([]byte(substitute(string(template), t.Values(), true)), &u.Object); err != nil {
			return trialProcess{}, fmt.Errorf("render trial %d: %w", t.Number, err)
		}
		argv, env := proc.Command(u)
		p := trialProcess{argv: argv}
		for _, e := range env {
			if e.ValueFrom == nil {
				p.env = append(p.env, e.Name+"="+e.Value)
			}
		}
		return p, nil
	})
}

// runProcesses runs the study with each trial the process that process
// describes, its log in the trial's directory.
func (l *Local) runProcesses(ctx context.Context, process func(t *Trial) (trialProcess, error)) (*Result, error) {
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
		p, err := process(t)
		if err != nil {
			return 0, err
		}
		return l.runProcess(ctx, t, p, filepath.Join(base, fmt.Sprintf("trial-%d", t.Number)))
	})
}

// runProcess runs p with its log in dir/steps/trial/log, reporting every
// value of the objective it prints to t as it prints it, and stopping it
// when t is stopped.
func (l *Local) runProcess(ctx context.Context, t *Trial, p trialProcess, dir string) (float64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	logDir := filepath.Join(dir, "steps", "trial")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return 0, fmt.Errorf("trial %d: %w", t.Number, err)
	}
	logFile, err := os.Create(filepath.Join(logDir, "log"))
	if err != nil {
		return 0, fmt.Errorf("trial %d: %w", t.Number, err)
	}
	defer logFile.Close()
	finished := make(chan struct{})
	type outcome struct {
		values []float64
		pruned bool
	}
	tailed := make(chan outcome, 1)
	go func() {
		var out outcome
		var rest string
		// A second descriptor reads what the process has written so far.
		f, _ := os.Open(logFile.Name())
		read := func() {
			if f == nil {
				return
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
	err = proc.Run(ctx, p.argv, append(os.Environ(), p.env...), logFile)
	close(finished)
	out := <-tailed
	switch {
	case out.pruned:
		return 0, ErrPruned
	case err != nil:
		return 0, fmt.Errorf("trial %d: %w (log: %s)", t.Number, err, logFile.Name())
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
