package main

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/serve"
)

//go:embed handbook
var handbook embed.FS

const (
	// baseModel is the catalogue model the adapter is trained on.
	baseModel = "Qwen/Qwen2.5-7B-Instruct"
	// model is the team's model in the registry; every version of it is a
	// LoRA adapter of baseModel.
	model = "support-bot"
	// production is the serving release that answers users; staging is the
	// one the evaluation runs against.
	production = "support-bot"
	staging    = "support-bot-staging"
	// datasetsClaim is the claim the labeled data is written to, mounted at
	// Platform.Datasets where the recipe runs; modelsClaim holds the
	// adapters.
	datasetsClaim = "datasets"
	modelsClaim   = "models"
)

// evalTasks are the lm-evaluation-harness tasks a candidate is scored on,
// and bar the score it must reach to be promoted.
var (
	evalTasks = []string{"mmlu", "gsm8k"}
	bar       = map[string]float64{"mmlu/acc": 0.70}
)

// Platform is what the recipe runs on: the team's namespace and the clients
// of its cluster, labeling project, registry and claims.
type Platform struct {
	Namespace string
	// Cube applies the workloads and waits for them.
	Cube *cube.Client
	// Kube reads what the evaluation pod reported (market.RecordEvaluation).
	Kube client.Client
	// Labels is the Label Studio the support answers were rated in, and
	// Project the project.
	Labels  *label.Client
	Project int
	// Registry is the team's model registry.
	Registry *market.Registry
	// Datasets is where the datasets claim is mounted here (a notebook
	// mounts it); the exported records are written under it.
	Datasets string
	// KnowledgeBases is the directory of the team's knowledge bases.
	KnowledgeBases string
	// Endpoint is where this program reaches the production server:
	// empty for its in-cluster URL (serve.URL), as from a notebook of the
	// namespace; from outside the cluster, a port-forward's address.
	Endpoint string
	// Wait bounds each wait (cube.DefaultWaitTimeout when zero).
	Wait time.Duration
	// Logf reports progress.
	Logf func(format string, args ...any)
}

// Outcome is what one run of the recipe leaves behind.
type Outcome struct {
	// Records are the labeled data exported for the fine-tune, and Dataset
	// where it reads them.
	Records *label.Records
	Dataset datasets.Dataset
	// Version is the version promoted to production, with its scores.
	Version market.Version
	// Serving is the production serving release.
	Serving *serve.Service
	// Answer is the knowledge base's answer to the question, written by the
	// served adapter.
	Answer *rag.Answer
}

// Run is the recipe: labeled data → fine-tune → evaluate → promote →
// serve with the adapter → answer from the handbook through it.
func Run(ctx context.Context, p Platform, question string) (*Outcome, error) {
	if p.Cube == nil || p.Kube == nil || p.Labels == nil || p.Registry == nil {
		return nil, errors.New("recipe: the platform needs Cube, Kube, Labels and Registry")
	}
	if p.Logf == nil {
		p.Logf = func(string, ...any) {}
	}
	if p.Wait <= 0 {
		p.Wait = cube.DefaultWaitTimeout
	}
	out := &Outcome{}

	// 1. Labeled data. Agents rated the answers a model drafted (1–5
	// stars) and rewrote the poor ones; label.SFT keeps the corrections
	// and the answers rated 4 or more, as Alpaca records, and the recipe
	// writes them to the datasets claim.
	tasks, err := p.Labels.Export(ctx, p.Project)
	if err != nil {
		return nil, err
	}
	out.Records, err = label.SFT(tasks, datasets.Alpaca, label.ResponseFields{})
	if err != nil {
		return nil, err
	}
	if out.Records.Len() == 0 {
		return nil, fmt.Errorf("project %d has no accepted answers to train on (%d tasks skipped)", p.Project, len(out.Records.Skipped))
	}
	file := filepath.Join("support", "sft-"+strconv.Itoa(p.Project)+".json")
	if err := writeRecords(filepath.Join(p.Datasets, file), out.Records); err != nil {
		return nil, err
	}
	out.Dataset = out.Records.Dataset("support", "pvc://"+datasetsClaim+"/"+filepath.ToSlash(file))
	p.Logf("exported %d records (%d tasks skipped) to %s", out.Records.Len(), len(out.Records.Skipped), out.Dataset.Source)

	// 2. Fine-tune. The next version of support-bot is a LoRA adapter of
	// the catalogue model, trained by LLaMA-Factory on the records; the
	// market records its lineage (base, dataset, release, settings).
	versions, err := p.Registry.Versions(ctx, model)
	if err != nil && !errors.Is(err, market.ErrNotFound) {
		return nil, err
	}
	n := strconv.Itoa(len(versions) + 1)
	base, err := market.Get(ctx, p.Registry, baseModel)
	if err != nil {
		return nil, err
	}
	adapter := market.Artifact{URI: "pvc://" + modelsClaim + "/" + model + "/v" + n, Format: market.FormatLoRA, DType: models.BF16}
	run, err := base.FineTune(model, adapter, func(weights, output string) market.Trainer {
		sft := llm.SFT(model+"-sft-v"+n, weights).
			AddDataset(out.Dataset).
			LoRA(llm.Adapter{Rank: 16, Alpha: 32, Dropout: 0.05}).
			CutoffLength(2048).Batch(2, 8).Epochs(3).LearningRate(1e-4).
			Output(output)
		sft.Job().Namespace(p.Namespace).On(hardware.L4).Accelerators(1)
		return market.TrainJob(sft, market.TrainingRun{
			Job:             "PyTorchJob/" + model + "-sft-v" + n,
			Datasets:        []string{out.Dataset.Source},
			Hyperparameters: map[string]string{"method": "lora", "lora_rank": "16", "epochs": "3", "learning_rate": "1e-4"},
		})
	})
	if err != nil {
		return nil, err
	}
	if _, err := applyAndWait(ctx, p, run, cube.Succeeded); err != nil {
		return nil, err
	}
	candidate, err := run.Register(ctx, p.Registry)
	if err != nil {
		return nil, err
	}
	p.Logf("registered %s (%s on %s)", candidate.Ref(), candidate.Artifact.URI, candidate.Lineage.BaseModel)

	// 3. Evaluate. The candidate is served in staging (vLLM, the base
	// model with the adapter under the name support-bot) and
	// lm-evaluation-harness scores it through that endpoint; the scores
	// go to the registry.
	entry, err := market.Get(ctx, p.Registry, candidate.Ref())
	if err != nil {
		return nil, err
	}
	stage, err := entry.Serve(staging, hardware.L4)
	if err != nil {
		return nil, err
	}
	stage.Namespace(p.Namespace)
	staged, err := applyAndWait(ctx, p, stage, cube.Ready)
	if err != nil {
		return nil, err
	}
	endpoint, err := serve.URL(stage)
	if err != nil {
		return nil, err
	}
	eval := entry.Evaluate("eval-"+model+"-v"+n, evalTasks...).Namespace(p.Namespace).Endpoint(endpoint, model)
	if _, err := applyAndWait(ctx, p, eval, cube.Succeeded); err != nil {
		return nil, err
	}
	scored, err := market.RecordEvaluation(ctx, p.Kube, p.Registry, eval)
	if err != nil {
		return nil, err
	}
	p.Logf("evaluated %s: %v", scored.Ref(), scored.Metrics)
	// The staging server was only for the evaluation.
	if err := staged.Delete(ctx); err != nil {
		return nil, err
	}
	for metric, least := range bar {
		if got, ok := scored.Metrics[metric]; !ok || got < least {
			return nil, fmt.Errorf("%s scored %s %v, below the bar %v: not promoted", scored.Ref(), metric, got, least)
		}
	}

	// 4. Promote, and 5. serve. The promotion archives the version in
	// production before it, and its rollout applies the production
	// release to the promoted adapter: applied again under the same name
	// after the next promotion, it rolls to that one.
	var served *cube.Release
	_, err = p.Registry.Promote(ctx, scored.Ref(), market.StageProduction, market.Promotion{
		By:     "support-bot recipe",
		Reason: fmt.Sprintf("mmlu/acc %.4f ≥ %.2f", scored.Metrics["mmlu/acc"], bar["mmlu/acc"]),
		Rollout: func(ctx context.Context, v market.Version) error {
			e, err := market.Get(ctx, p.Registry, v.Ref())
			if err != nil {
				return err
			}
			if out.Serving, err = e.Serve(production, hardware.L4); err != nil {
				return err
			}
			out.Serving.Namespace(p.Namespace).Autoscale(1, 4, serve.ScaleOnQueue("10"))
			served, err = applyAndWait(ctx, p, out.Serving, cube.Ready)
			return err
		},
	})
	if err != nil {
		return nil, err
	}
	if out.Version, err = p.Registry.Get(ctx, model+"@production"); err != nil {
		return nil, err
	}
	p.Logf("%s is in production", out.Version.Ref())

	// 6. Answer. The team's handbook is a knowledge base; its answers are
	// written by the served adapter (vLLM serves it under the name
	// support-bot, next to the base model) and cite the chunks they rest on.
	chat, err := serve.ClientAt(ctx, served, out.Serving, p.Endpoint, inference.ServedModel(model))
	if err != nil {
		return nil, err
	}
	kb, err := rag.OpenLibrary(p.KnowledgeBases).Open("support", "handbook", nil)
	if err != nil {
		return nil, err
	}
	defer kb.Close()
	docs, err := os.MkdirTemp("", "support-handbook")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(docs)
	sub, _ := fs.Sub(handbook, "handbook")
	if err := os.CopyFS(docs, sub); err != nil {
		return nil, err
	}
	rep, err := kb.IngestDir(ctx, docs)
	if err != nil {
		return nil, err
	}
	p.Logf("handbook: %d sources, %d chunks added, %d unchanged", rep.Sources, rep.Added, rep.Unchanged)
	out.Answer, err = kb.Chat(chat).Answer(ctx, question, rag.TopK(3))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// applyAndWait applies w as its own release and waits until it reaches
// phase, failing fast on pods that cannot start.
func applyAndWait(ctx context.Context, p Platform, w cube.Workload, until cube.Phase) (*cube.Release, error) {
	rel, err := p.Cube.Apply(ctx, w)
	if err != nil {
		return nil, err
	}
	p.Logf("applied %s/%s (%d objects)", rel.Namespace, rel.Name, len(rel.Objects))
	st, err := rel.Wait(ctx, until, cube.Timeout(p.Wait), cube.FailOnStuckPods, cube.OnProgress(func(s cube.Status) {
		p.Logf("%s: %s", rel.Name, s)
	}))
	if err != nil {
		return nil, err
	}
	p.Logf("%s: %s", rel.Name, st.Phase)
	return rel, nil
}

// writeRecords writes the records as the JSON file the fine-tune reads.
func writeRecords(path string, r *label.Records) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
