package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/proc"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
)

// The outcomes of a step in a local run that cube.Phase has no word for.
// A step ends cube.Succeeded or cube.Failed like a release, or:
const (
	// Skipped: the step's When was false.
	Skipped = graph.Skipped
	// Cached: an earlier run in the same directory ran the same spec
	// with the same inputs; its outputs were reused.
	Cached = graph.Cached
	// Omitted: the step did not run because a step it depends on
	// failed, another step failed first, or the run was cancelled.
	Omitted = graph.Omitted
)

// done reports whether a step in phase p counts as done for the steps after it.
func done(p cube.Phase) bool { return p == cube.Succeeded || p == Cached || p == Skipped }

// RunOption changes how Run works.
type RunOption interface{ applyToRun(*runOptions) }

type runOptions struct {
	dir         string
	parallelism int
	params      map[string]string
	handlers    []func(Event)
	progress    io.Writer
	replace     map[string]pipeline.StepFunc
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
func Replace(step string, fn pipeline.StepFunc) RunOption {
	return runOptionFunc(func(o *runOptions) {
		if o.replace == nil {
			o.replace = map[string]pipeline.StepFunc{}
		}
		o.replace[step] = fn
	})
}

// runFlag is a run option that needs no value; its values are constants,
// so no caller can change what one means.
type runFlag int

const (
	// NoCache runs every step again; results are still recorded for later runs.
	NoCache runFlag = iota + 1
)

func (f runFlag) applyToRun(o *runOptions) {
	if f == NoCache {
		o.noCache = true
	}
}

// Result is what a local run did.
type Result struct {
	Pipeline string
	// Dir is the run directory.
	Dir string
	// Phase is cube.Succeeded or cube.Failed.
	Phase    cube.Phase
	Duration time.Duration
	// Steps are in pipeline order, the exit handler last.
	Steps []StepResult

	g *graph.Graph
}

// StepResult is what one step did.
type StepResult struct {
	Name  string
	Phase cube.Phase
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
	Phase    cube.Phase
	Attempts int
	Duration time.Duration
	Outputs  map[string]string
	Err      error
	Log      string
}

// Step returns the result of the named step.
func (r *Result) Step(name string) (StepResult, bool) {
	if r == nil {
		return StepResult{}, false
	}
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
func Run(ctx context.Context, p *pipeline.Pipeline, opts ...RunOption) (*Result, error) {
	if p == nil {
		return nil, errNilPipeline
	}
	def := graph.Of(&p.Source)
	if def == nil { // a zero Pipeline never given a setting
		m := podspec.Of(&p.Handle)
		def = &graph.Pipeline{Name: m.Name(), MetaErrors: m.ValidateMeta(63)}
	}
	o := runOptions{parallelism: runtime.NumCPU(), progress: os.Stderr}
	for _, opt := range opts {
		opt.applyToRun(&o)
	}
	g, errs := graph.Analyze(def)
	errs = append(errs, o.problems...)
	errs = append(errs, validateLocal(g, &o)...)
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
func validateLocal(g *graph.Graph, o *runOptions) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedKeys(o.replace) {
		if _, ok := g.ByName[name]; !ok && (g.Exit == nil || g.Exit.C.Name != name) {
			errs = append(errs, field.NotFound(field.NewPath("replace"), name))
		}
	}
	for _, name := range sortedKeys(o.params) {
		if _, ok := g.Params[name]; !ok {
			errs = append(errs, field.NotFound(field.NewPath("params"), name))
		}
	}
	all := slices.Clone(g.Nodes)
	if g.Exit != nil {
		all = append(all, g.Exit)
	}
	for _, n := range all {
		if o.replace[n.C.Name] != nil {
			continue
		}
		switch s := n.Def.Value.(type) {
		case *pipeline.ContainerStep:
			if cmd, args := podspec.Of(&s.Handle).CommandLine(); len(cmd)+len(args) == 0 {
				errs = append(errs, field.Required(n.Path.Child("command"), "a container step needs a command to run locally (the image's entrypoint is unknown)"))
			}
		case *pipeline.ServeStep:
			errs = append(errs, field.Invalid(n.Path, n.C.Name,
				"a serving step applies a service to a cluster and runs only there (pipeline/argo): give local.Replace a function for it to run the rest here"))
		case *pipeline.WorkloadStep:
			if n.Primary == nil {
				continue
			}
			if argv, _ := proc.Command(n.Primary); len(argv) == 0 {
				errs = append(errs, field.Required(n.Path.Child("workload"), fmt.Sprintf(
					"%s %q has no container command to run locally: register a function with local.Replace(%q, fn)", n.Primary.GetKind(), n.Primary.GetName(), n.C.Name)))
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

// errNilPipeline is what Run returns for a nil pipeline.
var errNilPipeline = errors.New("pipeline: the *Pipeline is nil: make one with pipeline.New")
