package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/cubestudio/cube/serve"
)

func (a *app) planCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan serve|finetune MODEL --on PROFILE …",
		Short: "Ask cube's planners how a model fits on a profile",
		Long: `plan prints what cube's planners answer, without a cluster: for serving, the
layout (tensor and pipeline parallelism, nodes and devices) and what each
device's memory holds (serve.AutoPlan of the Service render serve prints); for
a fine-tune, the accelerators, the ZeRO stage and each device's memory
(llm.Plan, or llm.Check of a pinned layout), with time and cost when given the
tokens. It exits 1 when the model does not fit, saying by how much.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("%s: missing what to plan: serve or finetune (see %s --help)", cmd.CommandPath(), cmd.CommandPath())
		},
	}
	var sf serveFlags
	serveCmd := &cobra.Command{
		Use:   "serve MODEL --on PROFILE [--context-length N] [--engine E]",
		Short: "How a served model is laid out and what each device holds",
		Example: `  kubectl cube plan serve Qwen/Qwen2.5-72B-Instruct --on H100
  kubectl cube plan serve Llama-3.1-8B-Instruct --on L4 --context-length 8192`,
		Args: oneArg("MODEL (a catalogue name or a Hugging Face id)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			svc, err := sf.service(args[0])
			if err != nil {
				return err
			}
			plan, err := serve.AutoPlan(svc)
			if err != nil {
				return err
			}
			a.println(plan.String())
			return nil
		},
	}
	sf.add(serveCmd.Flags())

	var ff fineTuneFlags
	fineTuneCmd := &cobra.Command{
		Use:   "finetune MODEL --on PROFILE --dataset [NAME=]URI [--method M] [--accelerators N --zero S] [--tokens N]",
		Short: "How many accelerators a fine-tune needs and what each holds",
		Long: `plan finetune prints llm.Plan's answer: the fewest accelerators of the
profile and the lowest ZeRO stage whose memory holds the fine-tune, what each
device holds, and with --tokens the time. --accelerators and --zero ask about a
pinned layout instead (llm.Check): the plan is printed whether it fits or not,
and the command exits 1 when it does not. --output sizes nothing and may be
left out here.`,
		Example: `  kubectl cube plan finetune Qwen/Qwen2.5-7B-Instruct --on H100 --dataset pvc://datasets/support.json
  kubectl cube plan finetune Qwen/Qwen2.5-72B-Instruct --on H100 --full --dataset pvc://d/s.json --accelerators 8 --zero 2`,
		Args: oneArg("MODEL (a Hugging Face id, modelscope:// or pvc:// URI)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ff.loraRankSet = cmd.Flags().Changed("lora-rank")
			ft, acc, err := ff.fineTune(args[0], planOutput)
			if err != nil {
				return err
			}
			plan, err := ff.plan(ft, acc)
			if err != nil {
				return err
			}
			a.println(plan.String())
			if !plan.Fits {
				return fmt.Errorf("does not fit: %d × %s need %s a device, a device has %s",
					plan.Accelerators, acc.Name, gib(plan.NeedBytesPerDevice), gib(plan.DeviceBytes))
			}
			return nil
		},
	}
	ff.add(fineTuneCmd.Flags())
	cmd.AddCommand(serveCmd, fineTuneCmd)
	return cmd
}

// planOutput stands in for --output when plan finetune is not given one:
// the fine-tune refuses to exist without an output, and where the result
// goes changes no figure of the plan.
const planOutput = "pvc://plan/output"

// println writes s and one newline, whether or not s ends with one.
func (a *app) println(s string) {
	fmt.Fprintln(a.stdout, strings.TrimSuffix(s, "\n"))
}
