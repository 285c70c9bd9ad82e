package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/cubestudio/cube"
)

// phases are the phases a release can be in, as --state and --for take them.
var phases = []cube.Phase{cube.InProgress, cube.Ready, cube.Succeeded, cube.Failed, cube.Missing, cube.Unknown}

// parsePhase reads a phase name, ignoring case; flag names the flag in the
// error.
func parsePhase(flag, s string, allowed []cube.Phase) (cube.Phase, error) {
	names := make([]string, len(allowed))
	for i, p := range allowed {
		if strings.EqualFold(string(p), s) {
			return p, nil
		}
		names[i] = string(p)
	}
	return "", fmt.Errorf("%s %q: not a phase; one of %s", flag, s, strings.Join(names, ", "))
}

// statusParallelism bounds the Status reads list makes at once.
const statusParallelism = 8

func (a *app) listCmd() *cobra.Command {
	var kind, state string
	var all bool
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "list [--kind K] [--state S] [-n NS | -A]",
		Short: "List releases with their kind, phase, age and reason",
		Long: `list reads the releases cube recorded in the namespace (every namespace with
-A) and the status of each, as Release.Status reads it, and prints one line a
release: namespace, name, kind, phase, age (since it was first applied) and the
reason it is not Ready or Succeeded.

--kind keeps releases of one builder kind (vllm, pytorchjob, tenant, the
cube.dev/kind label); --state keeps releases in one phase (InProgress, Ready,
Succeeded, Failed, Missing, Unknown).`,
		Example: `  kubectl cube list -A
  kubectl cube list --kind vllm --state InProgress -n team-a`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := output.check(); err != nil {
				return err
			}
			var want cube.Phase
			if state != "" {
				var err error
				if want, err = parsePhase("--state", state, phases); err != nil {
					return err
				}
			}
			if all && cmd.Flags().Changed("namespace") {
				return fmt.Errorf("-A/--all-namespaces and -n/--namespace %q: give one of them", a.kube.namespace)
			}
			return a.list(cmd.Context(), kind, want, all, output)
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "list only releases of this builder kind (vllm, pytorchjob, tenant…)")
	cmd.Flags().StringVar(&state, "state", "", "list only releases in this phase (InProgress, Ready, Succeeded, Failed, Missing, Unknown)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "list the releases of every namespace")
	output.add(cmd.Flags())
	return cmd
}

// listed is one release with its status, or why its status could not be
// read.
type listed struct {
	rel *cube.Release
	st  cube.Status
	err error
}

func (a *app) list(ctx context.Context, kind string, want cube.Phase, all bool, output outputFlag) error {
	c, ns, err := a.client()
	if err != nil {
		return err
	}
	if all {
		ns = ""
	}
	var opts []cube.ReleasesOption
	if kind != "" {
		opts = append(opts, cube.OfKind(kind))
	}
	rels, err := c.Releases(ctx, ns, opts...)
	if err != nil {
		return err
	}
	rows := make([]listed, len(rels))
	var wg sync.WaitGroup
	sem := make(chan struct{}, statusParallelism)
	for i, rel := range rels {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			st, err := rel.Status(ctx)
			rows[i] = listed{rel: rel, st: st, err: err}
		}()
	}
	wg.Wait()

	failed := 0
	for _, r := range rows {
		if r.err != nil {
			failed++
		}
	}
	write := func() error { return a.listTable(rows, want, ns, kind) }
	if output == "json" {
		write = func() error { return a.listJSON(rows, want) }
	}
	if err := write(); err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("could not read the status of %d of %d releases (their rows say why)", failed, len(rows))
	}
	return nil
}

// listJSON writes the rows in phase want (all when empty) as {"items":
// [...]}; a release whose status could not be read has its error and no
// status, and is kept only when want is Unknown or empty.
func (a *app) listJSON(rows []listed, want cube.Phase) error {
	items := []releaseView{}
	for _, r := range rows {
		phase := r.st.Phase
		if r.err != nil {
			phase = cube.Unknown
		}
		if want != "" && phase != want {
			continue
		}
		items = append(items, viewOf(r.rel, r.st, r.err))
	}
	return writeJSON(a.stdout, struct {
		Items []releaseView `json:"items"`
	}{items})
}

func (a *app) listTable(rows []listed, want cube.Phase, ns, kind string) error {
	now := time.Now()
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 3, ' ', 0)
	shown := 0
	for _, r := range rows {
		phase, reason := r.st.Phase, reasonOf(r.st)
		if r.err != nil {
			// A status that cannot be read is not guessed: the row says
			// so, and the command fails after the table.
			phase, reason = cube.Unknown, "status: "+oneLine(r.err.Error())
		}
		if want != "" && phase != want {
			continue
		}
		if shown == 0 {
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tKIND\tPHASE\tAGE\tREASON")
		}
		shown++
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.rel.Namespace, r.rel.Name, r.rel.Kind, phase, age(now, r.rel.Created), reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if shown == 0 {
		fmt.Fprintln(a.stderr, noReleases(ns, kind, want))
	}
	return nil
}

func noReleases(ns, kind string, want cube.Phase) string {
	what := "No releases"
	if kind != "" {
		what += " of kind " + kind
	}
	if want != "" {
		what += " in phase " + string(want)
	}
	if ns == "" {
		return what + " found."
	}
	return what + " found in namespace " + ns + "."
}

// age reads like kubectl's AGE column; <unknown> for a release whose record
// has no creation time.
func age(now, created time.Time) string {
	if created.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(created))
}

// reasonOf is what Status.String says after the phase: the reason, the
// first refusal and the first pod problem, on one line.
func reasonOf(st cube.Status) string {
	return oneLine(strings.TrimLeft(strings.TrimPrefix(st.String(), string(st.Phase)), ":; "))
}

// oneLine keeps a reason on one table row.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
