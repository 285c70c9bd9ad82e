package cli

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/cubestudio/cube"
)

func (a *app) logsCmd() *cobra.Command {
	var (
		follow, previous bool
		container        string
		tail             int64
		since            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "logs NAME [-n NS] [-f] [-c CONTAINER] [--tail N] [--since D] [-p]",
		Short: "Stream the logs of a release's pods",
		Long: `logs streams the logs of every pod of the release (the pods carrying its
cube.dev/release label) through Release.Logs, each line prefixed with
"[pod-name] ". Pods still waiting for their first start have no logs yet and
are left out; logs fails only when no pod has any.`,
		Example: `  kubectl cube logs llama-sft -n team-a --follow
  kubectl cube logs qwen-chat -c vllm --tail 100`,
		Args: oneArg("NAME (the release name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if tail < 0 {
				return fmt.Errorf("--tail %d: must not be negative", tail)
			}
			if since < 0 {
				return fmt.Errorf("--since %s: must not be negative", since)
			}
			rel, err := a.release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			var opts []cube.LogOption
			if follow {
				opts = append(opts, cube.Follow)
			}
			if previous {
				opts = append(opts, cube.Previous)
			}
			if container != "" {
				opts = append(opts, cube.Container(container))
			}
			if tail > 0 {
				opts = append(opts, cube.TailLines(tail))
			}
			if since > 0 {
				opts = append(opts, cube.Since(since))
			}
			rc, err := rel.Logs(cmd.Context(), opts...)
			if err != nil {
				return err
			}
			_, err = io.Copy(a.stdout, rc)
			closeErr := rc.Close()
			if cmd.Context().Err() != nil {
				return nil // interrupted while following: not an error
			}
			return errors.Join(err, closeErr)
		},
	}
	f := cmd.Flags()
	f.BoolVarP(&follow, "follow", "f", false, "keep streaming new lines until interrupted")
	f.BoolVarP(&previous, "previous", "p", false, "the previous, terminated instance of each container (why it crashed)")
	f.StringVarP(&container, "container", "c", "", "the container (default: the pod's default container)")
	f.Int64Var(&tail, "tail", 0, "start from the last N lines of each pod (0: all)")
	f.DurationVar(&since, "since", 0, "only lines newer than this duration, e.g. 10m (0: all)")
	return cmd
}
