package local

import (
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
)

// EventType is what happened to a step in a local run.
type EventType string

// Event types.
const (
	EventStarted   EventType = "started"
	EventRetried   EventType = "retried"
	EventSucceeded EventType = "succeeded"
	EventFailed    EventType = "failed"
	// EventSkipped: the step (or item) did not run: its When was false
	// (Skipped), an earlier run had done it (Cached), or it was
	// omitted (Omitted). Reason says which.
	EventSkipped EventType = "skipped"
)

// Event is one step of progress of a local run.
type Event struct {
	Type EventType
	Step string
	// Index is the item's index for a fanned-out step, -1 otherwise.
	Index int
	Item  string
	// Attempt counts from 1; 0 for events outside an attempt.
	Attempt int
	Reason  string
	Err     error
	// Log is the step's log file (started, retried, succeeded, failed).
	Log string
	// Duration is the attempt's duration (succeeded, failed) or the wait
	// before the next attempt (retried).
	Duration time.Duration
	Time     time.Time
}

// Printer writes progress events as terminal lines, e.g.
//
//	▶ train
//	↻ train: attempt 1 failed, retrying in 1s: exit status 1
//	✓ train (2.31s)
//	⊘ deploy: when no == yes is false
type Printer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewPrinter returns a printer writing to w.
func NewPrinter(w io.Writer) *Printer { return &Printer{w: w} }

// Handle prints one event; pass it to OnEvent.
func (p *Printer) Handle(ev Event) {
	name := ev.Step
	if ev.Index >= 0 {
		name += "[" + strconv.Itoa(ev.Index) + "]"
	}
	var line string
	switch ev.Type {
	case EventStarted:
		line = "▶ " + name
		if ev.Attempt > 1 {
			line += fmt.Sprintf(" (attempt %d)", ev.Attempt)
		}
	case EventRetried:
		line = fmt.Sprintf("↻ %s: attempt %d failed, retrying in %s: %v", name, ev.Attempt, ev.Duration, ev.Err)
	case EventSucceeded:
		line = fmt.Sprintf("✓ %s (%s)", name, ev.Duration.Round(time.Millisecond))
		if ev.Reason != "" {
			line = fmt.Sprintf("✓ %s: %s", name, ev.Reason)
		}
	case EventFailed:
		line = fmt.Sprintf("✗ %s: %v", name, ev.Err)
		if ev.Log != "" {
			line += " (log: " + ev.Log + ")"
		}
	case EventSkipped:
		line = fmt.Sprintf("⊘ %s: %s", name, ev.Reason)
	default:
		line = fmt.Sprintf("%s %s", ev.Type, name)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}
