package pipeline

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/cubestudio/cube/pipeline/internal/graph"
)

// StepFunc is the body of a function step; t gives its inputs and takes its
// outputs. It must return when ctx ends.
type StepFunc func(ctx context.Context, t *Task) error

// Task is one execution of a function step: one attempt of one item. The
// local backend (pipeline/local) makes it; graph.TaskHandle holds its state
// and has nothing a user can call.
type Task struct{ graph.TaskHandle }

func (t *Task) state() *graph.TaskState { return graph.TaskOf(&t.TaskHandle) }

// Step returns the step name.
func (t *Task) Step() string { return t.state().Step }

// Attempt returns the attempt number, from 1.
func (t *Task) Attempt() int { return t.state().Attempt }

// Item returns the item of a fanned-out step, and its index (-1 without
// fan-out).
func (t *Task) Item() (string, int) { return t.state().Item, t.state().Index }

// Input returns the value of an input set with FuncStep.Input, with its
// placeholders replaced.
func (t *Task) Input(name string) string { return t.state().Inputs[name] }

// Param returns the value of a pipeline parameter.
func (t *Task) Param(name string) string { return t.state().Params[name] }

// Workspace returns the run's shared workspace directory.
func (t *Task) Workspace() string { return t.state().Workspace }

// Log returns the step's log file, created on the first write.
func (t *Task) Log() io.Writer { return t.state().Log }

// Logf writes a line to the step's log.
func (t *Task) Logf(format string, args ...any) {
	fmt.Fprintf(t.state().Log, format+"\n", args...)
}

// SetOutput records the value of a declared output.
func (t *Task) SetOutput(name, value string) error {
	s := t.state()
	if !slices.Contains(s.Declared, name) {
		return fmt.Errorf("set output %s of step %s: not declared with Outputs", name, s.Step)
	}
	if err := os.WriteFile(filepath.Join(s.Dir, "outputs", name), []byte(value), 0o644); err != nil {
		return fmt.Errorf("set output %s of step %s: %w", name, s.Step, err)
	}
	return nil
}
