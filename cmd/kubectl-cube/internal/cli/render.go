package cli

import (
	"bytes"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/cubestudio/cube"
)

func (a *app) renderCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "render serve|finetune MODEL --on PROFILE …",
		Short: "Print the objects cube would apply, as YAML",
		Long: `render builds a workload with cube's builders and prints its objects as
cube.Render writes them: multi-document YAML in apply order that
kubectl apply -f - accepts. It needs no cluster; -n sets the objects' namespace.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%s: missing what to render: serve or finetune (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
		},
	}
	var sf serveFlags
	serveCmd := &cobra.Command{
		Use:   "serve MODEL --on PROFILE [--name N] [--engine vllm|sglang|tgi|mindie]",
		Short: "Print a served model's objects, sized by the planner",
		Long: `render serve prints the objects of a served model: the engine's Service
builder (serve.VLLM by default) On the profile, sized with Auto (tensor
parallelism, devices per pod, nodes, context length and memory utilisation
from serve's planner; plan serve prints the plan). MODEL is a catalogue name or
a Hugging Face id; Auto needs the model's facts from the catalogue.`,
		Example: `  kubectl cube render serve Qwen/Qwen2.5-7B-Instruct --on H100 --name qwen-chat -n team-a | kubectl apply -f -`,
		Args:    oneArg("MODEL (a catalogue name or a Hugging Face id)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sf.namespace = a.kube.namespace
			svc, err := sf.service(args[0])
			if err != nil {
				return err
			}
			return a.render(svc)
		},
	}
	sf.add(serveCmd.Flags())

	var ff fineTuneFlags
	fineTuneCmd := &cobra.Command{
		Use:   "finetune MODEL --on PROFILE --dataset [NAME=]URI --output URI [--method sft|rm|dpo|orpo|simpo|kto]",
		Short: "Print a fine-tune's objects, laid out by the planner",
		Long: `render finetune prints the objects of an LLaMA-Factory fine-tune (package
llm): its configuration ConfigMap and the DeepSpeed PyTorchJob that runs it,
laid out by llm.Plan (the fewest accelerators of the profile and the lowest ZeRO
stage that hold it), or on the layout --accelerators and --zero pin (llm.Check),
which must fit. plan finetune prints the plan.`,
		Example: `  kubectl cube render finetune Qwen/Qwen2.5-7B-Instruct --on H100 \
      --dataset support=pvc://datasets/support.json --output pvc://models/support-bot`,
		Args: oneArg("MODEL (a Hugging Face id, modelscope:// or pvc:// URI)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ff.namespace = a.kube.namespace
			ff.loraRankSet = cmd.Flags().Changed("lora-rank")
			ft, acc, err := ff.fineTune(args[0], "")
			if err != nil {
				return err
			}
			plan, err := ff.plan(ft, acc)
			if err != nil {
				return err
			}
			if !plan.Fits {
				return fmt.Errorf("does not fit: %d × %s need %s a device, a device has %s (plan finetune says why)",
					plan.Accelerators, acc.Name, gib(plan.NeedBytesPerDevice), gib(plan.DeviceBytes))
			}
			return a.render(plan.Apply(ft, acc))
		},
	}
	ff.add(fineTuneCmd.Flags())
	cmd.AddCommand(serveCmd, fineTuneCmd)
	return cmd
}

// render writes w's YAML only once all of it rendered: an error leaves
// stdout empty rather than half a manifest.
func (a *app) render(w cube.Workload) error {
	var buf bytes.Buffer
	if err := cube.Render(&buf, w); err != nil {
		return err
	}
	_, err := a.stdout.Write(buf.Bytes())
	return err
}

// gib prints a byte count as the planners do.
func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }
