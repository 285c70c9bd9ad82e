package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/cubestudio/cube"
)

// waitPhases are the phases wait --for takes: those Release.Wait can reach.
var waitPhases = []cube.Phase{cube.Ready, cube.Succeeded, cube.Failed, cube.InProgress, cube.Missing}

func (a *app) waitCmd() *cobra.Command {
	var (
		until   string
		timeout time.Duration
		stuck   bool
	)
	cmd := &cobra.Command{
		Use:   "wait NAME --for Ready|Succeeded [--timeout D] [--fail-on-stuck-pods]",
		Short: "Wait until a release is Ready or Succeeded",
		Long: `wait follows the release with Release.Wait until it reaches the phase --for
names (Ready, Succeeded, Failed, InProgress or Missing), fails, can no longer
reach it, or the timeout passes; it exits 0 only when the phase was reached.

On a terminal it shows one live line: the time waited and the release's status.
When stdout is not a terminal (a pipe, a CI log) it prints one plain line each
time the status changes, and nothing else.

--fail-on-stuck-pods gives up as soon as a pod is stuck (an image that cannot be
pulled, a missing Secret key, a crash loop) or the cluster refused to create one
(a quota exceeded…), instead of waiting for the controller's deadline.`,
		Example: `  kubectl cube wait llama-sft --for Succeeded --timeout 6h
  kubectl cube wait qwen-chat --for Ready --fail-on-stuck-pods`,
		Args: oneArg("NAME (the release name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if until == "" {
				return fmt.Errorf("--for: required: the phase to wait for (Ready or Succeeded)")
			}
			phase, err := parsePhase("--for", until, waitPhases)
			if err != nil {
				return err
			}
			if timeout < 0 {
				return fmt.Errorf("--timeout %s: must not be negative", timeout)
			}
			rel, err := a.release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			p := newProgress(a.stdout, isTerminal(a.stdout))
			opts := []cube.WaitOption{cube.OnProgress(p.update)}
			if timeout > 0 {
				opts = append(opts, cube.Timeout(timeout))
			}
			if stuck {
				opts = append(opts, cube.FailOnStuckPods)
			}
			p.start()
			st, err := rel.Wait(cmd.Context(), phase, opts...)
			p.stop()
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "release %s/%s is %s\n", rel.Namespace, rel.Name, st.Phase)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&until, "for", "", "the phase to wait for: Ready, Succeeded, Failed, InProgress or Missing (required)")
	f.DurationVar(&timeout, "timeout", 0, "give up after this long, e.g. 30m (0: cube.DefaultWaitTimeout, "+cube.DefaultWaitTimeout.String()+")")
	f.BoolVar(&stuck, "fail-on-stuck-pods", false, "fail at once on a stuck pod or a pod the cluster refused to create")
	return cmd
}

// isTerminal reports whether w is a terminal: a live line there, plain
// lines anywhere else.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// tick is how often the live line redraws the time waited.
const tick = time.Second

// progress shows Wait's statuses: one line redrawn in place on a terminal,
// a plain line for each change elsewhere. update runs on Wait's goroutine,
// the redraws on a ticker's: mu orders them.
type progress struct {
	w     io.Writer
	live  bool
	width int

	mu      sync.Mutex
	begun   time.Time
	last    string
	drawn   bool
	done    chan struct{}
	stopped sync.WaitGroup
}

func newProgress(w io.Writer, live bool) *progress {
	p := &progress{w: w, live: live, width: 80, done: make(chan struct{})}
	if f, ok := w.(*os.File); ok && live {
		if width, _, err := term.GetSize(int(f.Fd())); err == nil && width > 0 {
			p.width = width
		}
	}
	return p
}

func (p *progress) start() {
	p.begun = time.Now()
	if !p.live {
		return
	}
	p.stopped.Add(1)
	go func() {
		defer p.stopped.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-t.C:
				p.mu.Lock()
				if p.last != "" {
					p.draw()
				}
				p.mu.Unlock()
			}
		}
	}()
}

// update is Wait's OnProgress: each status, once, as it changes.
func (p *progress) update(st cube.Status) {
	line := oneLine(st.String())
	p.mu.Lock()
	defer p.mu.Unlock()
	if line == p.last {
		return
	}
	p.last = line
	if p.live {
		p.draw()
		return
	}
	fmt.Fprintln(p.w, line)
}

// draw rewrites the live line: carriage return, the line cut to the
// terminal's width, erase to the end of the line.
func (p *progress) draw() {
	text := fmt.Sprintf("%s %s", time.Since(p.begun).Truncate(time.Second), p.last)
	if r := []rune(text); len(r) > p.width-1 {
		text = string(r[:max(p.width-2, 1)]) + "…"
	}
	fmt.Fprint(p.w, "\r"+text+"\x1b[K")
	p.drawn = true
}

// stop ends the live line so that what follows starts on a line of its own.
func (p *progress) stop() {
	if !p.live {
		return
	}
	close(p.done)
	p.stopped.Wait()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
