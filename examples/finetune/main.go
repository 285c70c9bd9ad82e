package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/cubestudio/cube/pod"

	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/llm"
)

func main() {
	apply := flag.Bool("apply", false, "apply to the cluster KUBECONFIG points at and wait")
	namespace := flag.String("namespace", "team-nlp", "the team's namespace")
	wait := flag.Duration("wait", 24*time.Hour, "how long -apply waits for each release")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *namespace, *apply, *wait); err != nil {
		log.Fatal(err)
	}
}

// step is one release of the journey and the phase it is waited for.
type step struct {
	w     cube.Workload
	until cube.Phase
}

// prices are the team's device-hour prices (an internal chargeback table).
var prices = map[string]float64{hardware.H100.Name: 2.8, hardware.L4.Name: 0.7}

// journey builds the releases, printing the plans and objects to out.
func journey(out io.Writer, ns string) ([]step, error) {
	const base = "Qwen/Qwen2.5-7B-Instruct"

	// 1. Labeled data: Alpaca records exported by the labeling project to
	// the datasets claim; 5% is held out to evaluate on while training.
	support := datasets.InstructionData("support", "pvc://datasets/support/alpaca.json", datasets.Alpaca)
	sft := llm.SFT("support-sft", base).
		AddDataset(support).
		ValidationSplit(0.05).EvalEvery(200).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32, Dropout: 0.05}).
		CutoffLength(4096).Batch(2, 8).Epochs(3).
		HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).
		Output("pvc://models/support-sft")
	sft.Job().Namespace(ns).Gang().Queue(ns)

	// 2. Plan it: the fewest H100s and the lowest ZeRO stage that hold it,
	// 40k samples of about 600 tokens, then put that layout on the job.
	plan, err := llm.Plan(sft, hardware.H100, llm.Tokens(40_000*600), llm.Prices(prices))
	if err != nil {
		return nil, fmt.Errorf("plan sft: %w", err)
	}
	plan.Apply(sft, hardware.H100)
	comment(out, plan.String())

	// 3. Align: DPO on preference pairs from the same project, starting
	// from the SFT adapter.
	pairs := datasets.PreferenceData("support-pairs", "pvc://datasets/support/pairs.json", datasets.Alpaca)
	dpo := llm.DPO("support-dpo", base).
		AddDataset(pairs).
		ResumeFrom("pvc://models/support-sft").
		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).
		Beta(0.1).Epochs(1).
		HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).
		Output("pvc://models/support-dpo")
	dpo.Job().Namespace(ns).Gang().Queue(ns)
	dpoPlan, err := llm.Plan(dpo, hardware.H100, llm.Tokens(8_000*900), llm.Prices(prices))
	if err != nil {
		return nil, fmt.Errorf("plan dpo: %w", err)
	}
	dpoPlan.Apply(dpo, hardware.H100)
	comment(out, dpoPlan.String())

	// 4. Serve the base with the aligned adapter on one L4.
	svc := dpo.Serve("support-chat").Namespace(ns).On(hardware.L4).HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"})

	if err := cube.Render(out, sft, dpo, svc); err != nil {
		return nil, err
	}
	return []step{{sft, cube.Succeeded}, {dpo, cube.Succeeded}, {svc, cube.Ready}}, nil
}

func run(ctx context.Context, out io.Writer, ns string, apply bool, wait time.Duration) error {
	steps, err := journey(out, ns)
	if err != nil || !apply {
		return err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// The fine-tunes run as PyTorchJobs: the client reads them with their
	// kinds (a client not given them reads them Unknown).
	c, err := cube.New(cfg, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	if err != nil {
		return err
	}
	for _, s := range steps {
		rel, err := c.Apply(ctx, s.w)
		if err != nil {
			return err
		}
		log.Printf("applied %s/%s (%d objects)", rel.Namespace, rel.Name, len(rel.Objects))
		st, err := rel.Wait(ctx, s.until, cube.Timeout(wait), cube.FailOnStuckPods, cube.OnProgress(func(s cube.Status) {
			log.Printf("%s: %s", rel.Name, s)
		}))
		if err != nil {
			return err
		}
		log.Printf("%s: %s", rel.Name, st.Phase)
	}
	return nil
}

// comment writes s as YAML comment lines.
func comment(w io.Writer, s string) {
	for line := range strings.SplitSeq(strings.TrimRight(s, "\n"), "\n") {
		fmt.Fprintln(w, strings.TrimRight("# "+line, " "))
	}
}
