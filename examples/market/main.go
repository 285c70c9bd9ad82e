package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/train"
)

func main() {
	registry := flag.String("registry", "", "registry file (default: a temporary one)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	path := *registry
	if path == "" {
		dir, err := os.MkdirTemp("", "cube-market")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		path = filepath.Join(dir, "registry.db")
	}
	if err := run(ctx, os.Stdout, path); err != nil {
		log.Fatal(err)
	}
}

// standInResults is what lm-evaluation-harness writes (results_<date>.json,
// trimmed): the scores are stand-ins, as nothing evaluates here.
const standInResults = `{"results": {
  "mmlu": {"alias": "mmlu", "acc,none": 0.7231, "acc_stderr,none": 0.0036},
  "gsm8k": {"alias": "gsm8k", "exact_match,strict-match": 0.8342, "exact_match_stderr,strict-match": 0.0102}
}}`

func run(ctx context.Context, out io.Writer, registryPath string) error {
	store, err := market.OpenFileStore(registryPath)
	if err != nil {
		return err
	}
	reg := market.NewRegistry(store)

	// 1. Fine-tune Qwen2.5-7B-Instruct into a new version of support-bot.
	base, err := market.Get(ctx, reg, "Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		return err
	}
	tuning, err := base.FineTune("support-bot",
		market.Artifact{URI: "pvc://models/support-bot/v1", Format: "safetensors", DType: models.BF16},
		func(baseWeights, output string) market.Trainer {
			job := train.PyTorch("sft-support-bot").Namespace("ml").
				Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
				Torchrun("sft.py", "--model", baseWeights, "--data", "/data/tickets.jsonl", "--output", output, "--lr", "2e-5").
				On(hardware.H100).Accelerators(8).PVC("data", "/data")
			return market.TrainJob(job, market.TrainingRun{
				Job:             "PyTorchJob/sft-support-bot",
				Datasets:        []string{"pvc://data/tickets.jsonl"},
				Hyperparameters: map[string]string{"learning_rate": "2e-5", "epochs": "3"},
			})
		})
	if err != nil {
		return err
	}
	// On a cluster: cube.Client.Apply(ctx, tuning), then Wait for success.
	v, err := tuning.Register(ctx, reg)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# registered %s from %s (release %s, lr %s)\n",
		v.Ref(), v.Lineage.BaseModel, v.Lineage.TrainingRelease, v.Lineage.Hyperparameters["learning_rate"])

	// 2. Evaluate it; record the scores.
	entry, err := market.Get(ctx, reg, v.Ref())
	if err != nil {
		return err
	}
	eval := entry.Evaluate("eval-support-bot", "mmlu", "gsm8k").Namespace("ml").On(hardware.H100).Accelerators(1)
	if _, err := eval.Build(); err != nil {
		return err
	}
	scores, err := market.ParseLMEvalResults([]byte(standInResults))
	if err != nil {
		return err
	}
	if v, err = reg.RecordMetrics(ctx, v.Ref(), scores); err != nil {
		return err
	}
	fmt.Fprintf(out, "# evaluated %s: mmlu/acc %.4f, gsm8k/exact_match/strict-match %.4f\n",
		v.Ref(), v.Metrics["mmlu/acc"], v.Metrics["gsm8k/exact_match/strict-match"])

	// 3. Promote it; the rollout renders the serving release for it.
	var serving cube.Workload
	_, err = reg.Promote(ctx, v.Ref(), market.StageProduction, market.Promotion{
		By: "alice", Reason: "beats the base on mmlu",
		Rollout: func(ctx context.Context, promoted market.Version) error {
			e, err := market.Get(ctx, reg, promoted.Ref())
			if err != nil {
				return err
			}
			// On a cluster: cube.Client.Apply rolls the release to it.
			serving = serve.FromMarket("support-bot", e, hardware.L4).Namespace("ml")
			return nil
		},
	})
	if err != nil {
		return err
	}
	prod, err := reg.Get(ctx, "support-bot@production")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "# %s is in production (by %s: %s)\n", prod.Ref(), prod.History[0].By, prod.History[0].Reason)
	fmt.Fprintln(out, "# the workloads: the fine-tune, the evaluation, the serving release")
	for _, w := range []cube.Workload{tuning, eval, serving} {
		if err := cube.Render(out, w); err != nil {
			return err
		}
		fmt.Fprintln(out, "---")
	}
	return nil
}
