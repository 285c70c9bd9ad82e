package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
)

// Phase is the outcome of a step in a local run, as Argo's node phase and
// cube.Phase are of a step and a release in a cluster (a phase is the
// value; a status, such as cube.Status, is the report that carries it).
type Phase string

// Step outcomes.
const (
	PhaseSucceeded Phase = "Succeeded"
	PhaseFailed    Phase = "Failed"
	// PhaseSkipped: the step's When was false.
	PhaseSkipped Phase = "Skipped"
	// PhaseCached: an earlier run in the same directory ran the same spec
	// with the same inputs; its outputs were reused.
	PhaseCached Phase = "Cached"
	// PhaseOmitted: the step did not run because a step it depends on
	// failed, another step failed first, or the run was cancelled.
	PhaseOmitted Phase = "Omitted"
)

func (s Phase) done() bool { return s == PhaseSucceeded || s == PhaseCached || s == PhaseSkipped }

// RunOption changes how Run works.
type RunOption interface{ applyToRun(*runOptions) }

type runOptions struct {
	dir         string
	parallelism int
	params      map[string]string
	handlers    []func(Event)
	progress    io.Writer
	replace     map[string]StepFunc
	noCache     bool
	problems    field.ErrorList
}

type runOptionFunc func(*runOptions)

func (f runOptionFunc) applyToRun(o *runOptions) { f(o) }

// RunDir keeps the run in dir: parameters, each step's inputs, outputs and
// log, the workspace and the cache. Running again in the same directory skips
// the steps that already succeeded with the same spec and inputs, so a failed
// run resumes where it stopped. Without RunDir each run gets a fresh
// temporary directory (Result.Dir), which the caller may remove.
func RunDir(dir string) RunOption { return runOptionFunc(func(o *runOptions) { o.dir = dir }) }

// Parallelism bounds how many steps (and fan-out items) of a local run
// execute at once (default: the number of CPUs; the pipeline's own
// Pipeline.Parallelism caps it).
func Parallelism(n int) RunOption {
	return runOptionFunc(func(o *runOptions) {
		if n < 1 {
			o.problems = append(o.problems, field.Invalid(field.NewPath("parallelism"), n, "must be at least 1"))
		}
		o.parallelism = n
	})
}

// SetParam sets a pipeline parameter for this run.
func SetParam(name, value string) RunOption {
	return runOptionFunc(func(o *runOptions) {
		if o.params == nil {
			o.params = map[string]string{}
		}
		o.params[name] = value
	})
}

// OnEvent calls fn with every progress event, one at a time.
func OnEvent(fn func(Event)) RunOption {
	return runOptionFunc(func(o *runOptions) { o.handlers = append(o.handlers, fn) })
}

// Progress sends the terminal progress printer's lines to w (default
// os.Stderr); nil turns the printer off.
func Progress(w io.Writer) RunOption {
	return runOptionFunc(func(o *runOptions) { o.progress = w })
}

// Replace runs fn instead of the named step, for workload steps whose job
// cannot run as one local process, or to stub a step in tests.
func Replace(step string, fn StepFunc) RunOption {
	return runOptionFunc(func(o *runOptions) {
		if o.replace == nil {
			o.replace = map[string]StepFunc{}
		}
		o.replace[step] = fn
	})
}

// NoCache runs every step again; results are still recorded for later runs.
var NoCache RunOption = runOptionFunc(func(o *runOptions) { o.noCache = true })

// Result is what a local run did.
type Result struct {
	Pipeline string
	// Dir is the run directory.
	Dir string
	// Phase is PhaseSucceeded or PhaseFailed.
	Phase    Phase
	Duration time.Duration
	// Steps are in pipeline order, the exit handler last.
	Steps []StepResult

	g *graph
}

// StepResult is what one step did.
type StepResult struct {
	Name  string
	Phase Phase
	// Reason says why a step was skipped, omitted or failed.
	Reason string
	// Attempts counts the attempts made (of every item, for a fan-out).
	Attempts int
	Duration time.Duration
	// Outputs are the step's output values; of a fanned-out step, JSON lists.
	Outputs map[string]string
	Err     error
	// Log is the log file of a step without fan-out (a function step that
	// wrote nothing has none).
	Log string
	// Items are the runs of a fanned-out step, in item order.
	Items []ItemResult
}

// ItemResult is one item of a fanned-out step.
type ItemResult struct {
	Item     string
	Phase    Phase
	Attempts int
	Duration time.Duration
	Outputs  map[string]string
	Err      error
	Log      string
}

// Step returns the result of the named step.
func (r *Result) Step(name string) (StepResult, bool) {
	for _, s := range r.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return StepResult{}, false
}

// StepError is a step that failed in a local run.
type StepError struct {
	Step string
	Item int // -1 when the step does not fan out
	Log  string
	Err  error
}

func (e *StepError) Error() string {
	name := e.Step
	if e.Item >= 0 {
		name += "[" + strconv.Itoa(e.Item) + "]"
	}
	if e.Log != "" {
		return fmt.Sprintf("step %s: %v (log: %s)", name, e.Err, e.Log)
	}
	return fmt.Sprintf("step %s: %v", name, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Run runs the pipeline in-process, with no cluster: function steps are
// called, container steps run their command and args as a local subprocess
// (the image, resources, hardware and volumes are ignored, and the working
// directory is the caller's), workload steps run their main container's
// command once as a single local process (or the function Replace gives).
// It honours dependencies, the parallelism bound, retries with backoff,
// timeouts, When and fan-out, and runs the exit handler last. Values move
// through files in the run directory. Cancelling ctx kills the whole process
// tree of every running step.
//
// Run returns the result of every step and, if any failed or ctx ended, an
// error joining each *StepError (and ctx's error). A pipeline that does not
// validate returns no result and every problem at once.
func (p *Pipeline) Run(ctx context.Context, opts ...RunOption) (*Result, error) {
	if p == nil {
		return nil, errNilPipeline
	}
	o := runOptions{parallelism: runtime.NumCPU(), progress: os.Stderr}
	for _, opt := range opts {
		opt.applyToRun(&o)
	}
	g, errs := p.analyze()
	errs = append(errs, o.problems...)
	errs = append(errs, g.validateLocal(&o)...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	r, err := newRun(g, o)
	if err != nil {
		return nil, err
	}
	return r.run(ctx)
}

// validateLocal checks what only the local runner needs.
func (g *graph) validateLocal(o *runOptions) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(o.replace) {
		if _, ok := g.byName[name]; !ok && (g.exit == nil || g.exit.c.name != name) {
			errs = append(errs, field.NotFound(field.NewPath("replace"), name))
		}
	}
	for _, name := range sortedKeys(o.params) {
		if _, ok := g.params[name]; !ok {
			errs = append(errs, field.NotFound(field.NewPath("params"), name))
		}
	}
	all := slices.Clone(g.nodes)
	if g.exit != nil {
		all = append(all, g.exit)
	}
	for _, n := range all {
		if o.replace[n.c.name] != nil {
			continue
		}
		switch s := n.step.(type) {
		case *ContainerStep:
			if cmd, args := podspec.Of(&s.Handle).CommandLine(); len(cmd)+len(args) == 0 {
				errs = append(errs, field.Required(n.path.Child("command"), "a container step needs a command to run locally (the image's entrypoint is unknown)"))
			}
		case *WorkloadStep:
			if n.primary == nil {
				continue
			}
			if argv, _ := localCommand(n.primary); len(argv) == 0 {
				errs = append(errs, field.Required(n.path.Child("workload"), fmt.Sprintf(
					"%s %q has no container command to run locally: register a function with pipeline.Replace(%q, fn)", n.primary.GetKind(), n.primary.GetName(), n.c.name)))
			}
		}
	}
	return errs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Task is one execution of a function step: one attempt of one item.
type Task struct {
	step      string
	item      string
	index     int
	attempt   int
	inputs    map[string]string
	params    map[string]string
	workspace string
	dir       string
	declared  []string
	log       io.Writer
}

// Step returns the step name.
func (t *Task) Step() string { return t.step }

// Attempt returns the attempt number, from 1.
func (t *Task) Attempt() int { return t.attempt }

// Item returns the item of a fanned-out step, and its index (-1 without
// fan-out).
func (t *Task) Item() (string, int) { return t.item, t.index }

// Input returns the value of an input set with FuncStep.Input, with its
// placeholders replaced.
func (t *Task) Input(name string) string { return t.inputs[name] }

// Param returns the value of a pipeline parameter.
func (t *Task) Param(name string) string { return t.params[name] }

// Workspace returns the run's shared workspace directory.
func (t *Task) Workspace() string { return t.workspace }

// Log returns the step's log file, created on the first write.
func (t *Task) Log() io.Writer { return t.log }

// Logf writes a line to the step's log.
func (t *Task) Logf(format string, args ...any) {
	fmt.Fprintf(t.log, format+"\n", args...)
}

// SetOutput records the value of a declared output.
func (t *Task) SetOutput(name, value string) error {
	if !slices.Contains(t.declared, name) {
		return fmt.Errorf("set output %s of step %s: not declared with Outputs", name, t.step)
	}
	if err := os.WriteFile(filepath.Join(t.dir, "outputs", name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("set output %s of step %s: %w", name, t.step, err)
	}
	return nil
}
