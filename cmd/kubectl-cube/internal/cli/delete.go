package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func (a *app) deleteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME [-n NS]",
		Short: "Delete what a release created, and nothing else",
		Long: `delete deletes a release as Release.Delete does: the objects the release
created (those that still carry its labels and UID), last applied first, with
foreground propagation, and then its record. Objects another release or a person
took over, and objects the release found in place and adopted (a Namespace made
by an administrator), are left alone. Deleting a tenant's release deletes the
Namespace it created, and everything in it.`,
		Example: `  kubectl cube delete qwen-chat -n team-a`,
		Args:    oneArg("NAME (the release name)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rel, err := a.release(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if err := rel.Delete(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "release %s/%s deleted\n", rel.Namespace, rel.Name)
			return nil
		},
	}
}
