package local

import (
	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/proc"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/internal/graph"
	"github.com/cubestudio/cube/retry"

	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// execute runs one instance with its retries.
func (r *run) execute(ctx context.Context, spec *taskSpec) {
	inst, name := spec.inst, spec.ns.n.C.Name
	inst.log = filepath.Join(spec.dir, "log")
	inst.start = time.Now()
	defer func() { inst.duration = time.Since(inst.start) }()
	if !r.o.noCache {
		if e, ok := r.cache.get(spec.key); ok && e.Step == name {
			inst.status, inst.outputs = Cached, e.Outputs
			r.emit(Event{Type: EventSkipped, Step: name, Index: inst.index, Item: inst.item, Reason: "cached"})
			return
		}
	}
	var policy retry.Policy
	if rp := spec.ns.n.C.Retry; rp != nil {
		policy = *rp
	}
	for {
		inst.attempts++
		r.emit(Event{Type: EventStarted, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Log: inst.log})
		began := time.Now()
		outputs, err := r.attempt(ctx, spec)
		if err == nil {
			inst.status, inst.outputs = cube.Succeeded, outputs
			r.cache.put(cacheEntry{Key: spec.key, Step: name, Outputs: outputs})
			r.emit(Event{Type: EventSucceeded, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Duration: time.Since(began), Log: inst.log})
			return
		}
		if delay, ok := r.retryAfter(ctx, policy, pipeline.RetryCondition(spec.ns.n.C.RetryOn), inst, err); ok {
			r.emit(Event{Type: EventRetried, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Err: err, Duration: delay, Log: inst.log})
			t := time.NewTimer(delay)
			select {
			case <-t.C:
				continue
			case <-ctx.Done():
				t.Stop()
				err = errors.Join(err, ctx.Err())
			}
		}
		inst.status, inst.err = cube.Failed, &StepError{Step: name, Item: inst.index, Log: inst.log, Err: err}
		r.emit(Event{Type: EventFailed, Step: name, Index: inst.index, Item: inst.item, Attempt: inst.attempts, Err: err, Duration: time.Since(began), Log: inst.log})
		return
	}
}

// retryAfter says whether a failed attempt is retried, and after how long.
func (r *run) retryAfter(ctx context.Context, policy retry.Policy, on pipeline.RetryCondition, inst *instance, err error) (time.Duration, bool) {
	if ctx.Err() != nil || inst.attempts > policy.Limit {
		return 0, false
	}
	var se *startError
	isError := errors.As(err, &se)
	switch on {
	case pipeline.OnError, pipeline.OnTransientError:
		if !isError {
			return 0, false
		}
	case pipeline.Always:
	default:
		if isError {
			return 0, false
		}
	}
	delay := policy.Delay(inst.attempts)
	if policy.MaxDuration > 0 && time.Since(inst.start)+delay > policy.MaxDuration {
		return 0, false
	}
	return delay, true
}

// startError is a step that could not start: Argo calls it an error, not a
// failure, for retry policies.
type startError struct{ err error }

func (e *startError) Error() string { return e.err.Error() }
func (e *startError) Unwrap() error { return e.err }

// attempt runs an instance once and reads its outputs.
func (r *run) attempt(ctx context.Context, spec *taskSpec) (map[string]string, error) {
	outDir := filepath.Join(spec.dir, "outputs")
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return nil, &startError{fmt.Errorf("create step directory: %w", err)}
	}
	for _, o := range spec.outputs { // an earlier attempt's or run's value must not count
		if err := os.Remove(filepath.Join(outDir, o)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, &startError{fmt.Errorf("clear output %s: %w", o, err)}
		}
	}
	if len(spec.inputs) > 0 {
		inDir := filepath.Join(spec.dir, "inputs")
		if err := os.MkdirAll(inDir, 0o755); err != nil {
			return nil, &startError{fmt.Errorf("create inputs: %w", err)}
		}
		for name, v := range spec.inputs {
			if err := os.WriteFile(filepath.Join(inDir, name), []byte(v), 0o644); err != nil {
				return nil, &startError{fmt.Errorf("write input %s: %w", name, err)}
			}
		}
	}
	log := &stepLog{path: filepath.Join(spec.dir, "log")}
	defer log.close()
	if spec.inst.attempts > 1 {
		fmt.Fprintf(log, "--- attempt %d ---\n", spec.inst.attempts)
	}
	actx, cancel := ctx, context.CancelFunc(func() {})
	if c := spec.ns.n.C; c.TimeoutSet {
		actx, cancel = context.WithTimeoutCause(ctx, c.Timeout, fmt.Errorf("timed out after %s", c.Timeout))
	}
	defer cancel()
	var err error
	if spec.fn != nil {
		t := *spec.task
		ts := graph.TaskOf(&t.TaskHandle)
		ts.Attempt, ts.Log = spec.inst.attempts, log
		err = callFunc(actx, spec.fn, &t)
	} else {
		var f *os.File
		if f, err = log.open(); err != nil {
			return nil, &startError{fmt.Errorf("open log: %w", err)}
		}
		err = proc.Run(actx, spec.argv, append(os.Environ(), spec.env...), f)
		if se, ok := errors.AsType[*proc.StartError](err); ok {
			err = &startError{se.Err}
		}
	}
	if err != nil {
		if cause := context.Cause(actx); cause != nil && ctx.Err() == nil {
			return nil, cause // the step's own timeout, not the run's end
		}
		return nil, err
	}
	outputs := make(map[string]string, len(spec.outputs)+len(spec.fixed))
	maps.Copy(outputs, spec.fixed)
	for _, o := range spec.outputs {
		b, err := os.ReadFile(filepath.Join(outDir, o))
		if err != nil {
			return nil, fmt.Errorf("output %s was not written to %s", o, filepath.Join(outDir, o))
		}
		outputs[o] = strings.TrimSuffix(string(b), "\n")
	}
	return outputs, nil
}

func callFunc(ctx context.Context, fn pipeline.StepFunc, t *pipeline.Task) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return fn(ctx, t)
}

// result builds the Result and the run's error.
func (r *run) result(ctx context.Context, began time.Time) (*Result, error) {
	res := &Result{Pipeline: r.g.P.Name, Dir: r.dir, Phase: cube.Succeeded, Duration: time.Since(began), g: r.g}
	var errs []error
	for _, ns := range r.nodes {
		sr := StepResult{Name: ns.n.C.Name, Phase: ns.status, Reason: ns.reason, Outputs: ns.outputs, Err: ns.err}
		if !ns.start.IsZero() {
			sr.Duration = ns.end.Sub(ns.start)
		}
		for _, in := range ns.insts {
			sr.Attempts += in.attempts
			if in.status == cube.Failed {
				errs = append(errs, in.err)
			}
			if !ns.fanned {
				sr.Log, sr.Duration = in.log, in.duration
				if in.err != nil {
					sr.Err = in.err
				}
				continue
			}
			st := in.status
			if st == "" {
				st = Omitted
			}
			sr.Items = append(sr.Items, ItemResult{Item: in.item, Phase: st, Attempts: in.attempts, Duration: in.duration, Outputs: in.outputs, Err: in.err, Log: in.log})
		}
		if ns.status == cube.Failed {
			res.Phase = cube.Failed
			if len(ns.insts) == 0 { // failed before any item started (When, ForEachIn)
				errs = append(errs, &StepError{Step: ns.n.C.Name, Item: -1, Err: ns.err})
			}
		}
		res.Steps = append(res.Steps, sr)
	}
	if ctx.Err() != nil {
		res.Phase = cube.Failed
		errs = append(errs, ctx.Err())
	}
	if len(errs) > 0 {
		return res, fmt.Errorf("run %s: %w", r.g.P.Name, errors.Join(errs...))
	}
	return res, nil
}
