package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/kinds"
)

// Run runs the plugin with args (without the program name), writing
// results to stdout and errors to stderr, and returns the exit code: 0 on
// success, 1 on any error. ctx bounds every call to the cluster; cancel it
// to stop a wait or a followed log.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return run(ctx, args, stdout, stderr, connect)
}

// connector makes the Client of a command from the cluster flags and says
// which namespace the flags select.
type connector func(k *kubeFlags) (*cube.Client, string, error)

// kubeFlags are the flags that choose a cluster and a namespace, as
// kubectl reads them.
type kubeFlags struct {
	kubeconfig, context, namespace string
}

// app is one run of the plugin: its streams and how it reaches a cluster.
type app struct {
	stdout, stderr io.Writer
	kube           kubeFlags
	connect        connector
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer, c connector) int {
	a := &app{stdout: stdout, stderr: stderr, connect: c}
	root := a.root()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(stderr, "error:", err)
		return 1
	}
	return 0
}

func (a *app) root() *cobra.Command {
	root := &cobra.Command{
		Use:   "kubectl-cube",
		Short: "Follow, inspect and plan the releases of cube",
		Long: `kubectl cube lists the releases cube applied, says where each stands and why
(stuck pods, pods the cluster refused), streams their logs, waits on them,
deletes what they created, and prints what cube would apply and what its
planners answer.`,
		Annotations:       map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl cube"},
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return fmt.Errorf("%s: %w (see %s --help)", cmd.CommandPath(), err, cmd.CommandPath())
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.kube.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config, then the in-cluster service account)")
	pf.StringVar(&a.kube.context, "context", "", "the kubeconfig context to use (default: the current context)")
	pf.StringVarP(&a.kube.namespace, "namespace", "n", "", "the namespace (default: the context's namespace)")
	root.AddCommand(a.listCmd(), a.statusCmd(), a.logsCmd(), a.waitCmd(), a.deleteCmd(), a.renderCmd(), a.planCmd())
	return root
}

// connect reads the kubeconfig as kubectl does (clientcmd's loading rules:
// --kubeconfig, KUBECONFIG, ~/.kube/config, then in-cluster) and makes a
// Client that reads the phase of every kind cube builds.
func connect(k *kubeFlags) (*cube.Client, string, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = k.kubeconfig
	overrides := &clientcmd.ConfigOverrides{CurrentContext: k.context}
	overrides.Context.Namespace = k.namespace
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	cfg, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	ns, _, err := cc.Namespace()
	if err != nil {
		return nil, "", fmt.Errorf("kubeconfig: %w", err)
	}
	if problems := validation.IsDNS1123Label(ns); len(problems) > 0 {
		return nil, "", fmt.Errorf("-n/--namespace %q: %s", ns, strings.Join(problems, "; "))
	}
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "kubectl-cube " + rest.DefaultKubernetesUserAgent()
	c, err := cube.New(cfg, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	if err != nil {
		return nil, "", err
	}
	return c, ns, nil
}

// client connects for a command.
func (a *app) client() (*cube.Client, string, error) {
	if a.connect == nil {
		return nil, "", errors.New("no cluster connection")
	}
	return a.connect(&a.kube)
}

// noArgs refuses arguments, naming the first.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("%s: unexpected argument %q (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}

// oneArg requires exactly one argument, named what in the errors.
func oneArg(what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("%s: missing %s (see %s --help)", cmd.CommandPath(), what, cmd.CommandPath())
		case len(args) > 1:
			return fmt.Errorf("%s: unexpected argument %q after %s %q", cmd.CommandPath(), args[1], what, args[0])
		case args[0] == "":
			return fmt.Errorf("%s: %s is empty", cmd.CommandPath(), what)
		}
		return nil
	}
}

// release finds the release name in the namespace the flags select.
func (a *app) release(ctx context.Context, name string) (*cube.Release, error) {
	c, ns, err := a.client()
	if err != nil {
		return nil, err
	}
	rel, err := c.Release(ctx, ns, name)
	if errors.Is(err, cube.ErrNotFound) {
		return nil, fmt.Errorf("release %q not found in namespace %q (kubectl cube list -A lists every release)", name, ns)
	}
	return rel, err
}
