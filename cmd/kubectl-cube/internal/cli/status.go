package cli

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/cubestudio/cube"
)

func (a *app) statusCmd() *cobra.Command {
	var output outputFlag
	cmd := &cobra.Command{
		Use:   "status NAME [-n NS]",
		Short: "Say where a release stands and why",
		Long: `status reads the release once, as Release.Status does, and prints its phase
and reason, each object's phase with its controller's reason and message, why
its jobs wait in Kueue (queued for quota, inadmissible, preempted), the pods
the cluster refused to create (a quota exceeded, Pod Security, a
LimitRange, a webhook, a missing ServiceAccount: read from the controllers'
events) and what its pods are stuck on (unschedulable, an image that cannot be
pulled, a missing Secret key, a crash loop), while it is neither Ready nor
Succeeded.`,
		Example: `  kubectl cube status qwen-chat -n team-a
  kubectl cube status qwen-chat -n team-a -o json | jq .status.phase`,
		Args: oneArg("NAME (the release name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := output.check(); err != nil {
				return err
			}
			rel, err := a.release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			st, err := rel.Status(cmd.Context())
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSON(a.stdout, viewOf(rel, st, nil))
			}
			return writeStatus(a.stdout, rel, st, time.Now())
		},
	}
	output.add(cmd.Flags())
	return cmd
}

// writeStatus prints a release's status the way `kubectl describe` lays
// out an object: a header, then tables.
func writeStatus(w io.Writer, rel *cube.Release, st cube.Status, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintf(tw, "Release:\t%s/%s\n", rel.Namespace, rel.Name)
	fmt.Fprintf(tw, "Kind:\t%s\n", rel.Kind)
	fmt.Fprintf(tw, "Age:\t%s\n", age(now, rel.Created))
	fmt.Fprintf(tw, "Phase:\t%s\n", st.Phase)
	if st.Reason != "" {
		fmt.Fprintf(tw, "Reason:\t%s\n", oneLine(st.Reason))
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "OBJECT\tPHASE\tREASON\tMESSAGE")
	for _, o := range st.Objects {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", o.Ref, o.Phase, dash(o.Reason), dash(oneLine(o.Message)))
	}
	if len(st.Refusals) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "REFUSED PODS OF\tREASON\tCOUNT\tLAST\tMESSAGE")
		for _, r := range st.Refusals {
			last := "<unknown>"
			if !r.Last.IsZero() {
				last = age(now, r.Last) + " ago"
			}
			message := r.Message
			if r.Quota != nil {
				message = r.Quota.Error()
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", r.Object, r.Reason, r.Count, last, oneLine(message))
		}
	}
	if len(st.Queue) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "QUEUED\tWORKLOAD\tREASON\tMESSAGE")
		for _, q := range st.Queue {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", q.Object, q.Workload, q.Reason, dash(oneLine(q.Message)))
		}
	}
	if len(st.Pods) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "POD\tCONTAINER\tREASON\tRESTARTS\tSTUCK\tMESSAGE")
		for _, p := range st.Pods {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%t\t%s\n", p.Pod, dash(p.Container), p.Reason, p.Restarts, p.Stuck, dash(oneLine(p.Message)))
		}
	}
	return tw.Flush()
}

// dash stands in for an empty cell, so that columns stay aligned.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
