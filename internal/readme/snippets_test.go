package readme_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/rag"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

func clientSnippet(restConfig *rest.Config) (*cube.Client, error) {
	// snippet: client
	c, err := cube.New(restConfig, cube.Namespace("team-nlp"), cube.Kinds(kinds.All()...))
	// end snippet
	return c, err
}

func tenantSnippet(ctx context.Context, c *cube.Client) (*cube.Release, error) {
	// snippet: tenant
	team := tenant.New("team-nlp").
		Editors("alice@example.com").Viewers("bob@example.com").
		CPU("512").Memory("4Ti").Accelerators(hardware.H100, 32)
	rel, err := c.Apply(ctx, team) // namespace, quota, Volcano queue, Roles, network isolation
	// end snippet
	return rel, err
}

func fineTuneSnippet(ctx context.Context, c *cube.Client) error {
	// snippet: fine-tune
	sft := llm.SFT("support-sft", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(datasets.InstructionData("support", "pvc://datasets/support/alpaca.json", datasets.Alpaca)).
		LoRA(llm.Adapter{Rank: 16, Alpha: 32}).
		Output("pvc://models/support-sft")
	plan, err := llm.Plan(sft, hardware.H100, llm.Tokens(40_000*600)) // the fewest H100s, the lowest ZeRO stage
	if err != nil {
		return err
	}
	rel, err := c.Apply(ctx, plan.Apply(sft, hardware.H100)) // a PyTorchJob running LLaMA-Factory
	if err != nil {
		return err
	}
	_, err = rel.Wait(ctx, cube.Succeeded) // watches; says why pods are stuck or refused
	// end snippet
	return err
}

func serveSnippet(ctx context.Context, c *cube.Client) (*inference.Client, error) {
	// snippet: serve
	chat := serve.VLLM("qwen-chat", "hf://Qwen/Qwen2.5-72B-Instruct").
		On(hardware.H100).Auto(serve.ContextLength(32768)). // the planner picks the GPUs and parallelism
		LoRA("support", "pvc://models/support-sft").
		Autoscale(1, 4, serve.ScaleOnQueue("10"))
	rel, err := c.Apply(ctx, chat)
	if err != nil {
		return nil, err
	}
	client, err := serve.Client(ctx, rel, chat) // waits until Ready; http://qwen-chat-api.team-nlp:8000
	// end snippet
	return client, err
}

func pipelineSnippet(ctx context.Context, c *cube.Client) (*cube.Release, error) {
	// snippet: pipeline
	job := train.PyTorch("llama-sft").Image("nvcr.io/nvidia/pytorch:24.05-py3").
		Torchrun("/workspace/sft.py").Nodes(2).On(hardware.H100).Accelerators(8)
	prepare := pipeline.Container("prepare").Image("python:3.12").
		Command("python", "/workspace/prepare.py", "--out", pipeline.OutputFile("rows")).Outputs("rows")
	fit := pipeline.Workload("train", job).After(prepare) // any cube workload is a step
	report := pipeline.Container("report").Image("python:3.12").
		Command("python", "/workspace/report.py", "--rows", prepare.Output("rows")).After(fit)
	flow := pipeline.New("sft-flow").ServiceAccount(tenant.PipelineServiceAccount).
		Kinds(train.Kinds()...). // Argo waits on the PyTorchJob with train's conditions
		Step(prepare, fit, report)
	rel, err := c.Apply(ctx, argo.Workflow(flow)) // an Argo Workflow; local.Run(ctx, flow) runs it here
	// end snippet
	return rel, err
}

func ragSnippet(ctx context.Context, root, docs, url string) error {
	// snippet: rag
	kb, err := rag.OpenLibrary(root).Open("team-nlp", "handbook", nil) // an embedded store, no server
	if err != nil {
		return err
	}
	defer kb.Close()
	if _, err := kb.IngestDir(ctx, docs); err != nil { // Markdown, PDF, DOCX, HTML, CSV…
		return err
	}
	chat, err := inference.NewClient(url, inference.ServedModel("support"))
	if err != nil {
		return err
	}
	a, err := kb.Chat(chat).Answer(ctx, "How long does a refund take?")
	if err != nil {
		return err
	}
	fmt.Println(a.Text)
	for _, c := range a.Citations {
		fmt.Printf("[%d] %s — %s\n", c.N, c.Source, c.Section)
	}
	// end snippet
	return nil
}

// snippet: cubetest
// launch is your automation: it applies a training job and waits for it.
func launch(ctx context.Context, c *cube.Client, nodes int) error {
	job := train.PyTorch("support-sft").Image("pytorch/pytorch:2.4.0-cuda12.4-cudnn9-runtime").
		Torchrun("sft.py").Nodes(nodes).On(hardware.H100).Accelerators(8)
	rel, err := c.Apply(ctx, job)
	if err != nil {
		return err
	}
	_, err = rel.Wait(ctx, cube.Succeeded, cube.FailOnStuckPods)
	return err
}

func TestLaunchReportsAFailedRun(t *testing.T) {
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-nlp"))
	// Play the training operator: a PyTorchJob fails an hour after it is
	// created, on the cluster's clock (the test takes milliseconds).
	err := cluster.React(cubetest.Kind("PyTorchJob"),
		cubetest.After(time.Hour, cubetest.FailWith("BackoffLimitExceeded", "worker 1 exited 137")))
	if err != nil {
		t.Fatal(err)
	}
	if err := launch(t.Context(), cluster.Client, 1); !errors.Is(err, cube.ErrFailed) {
		t.Fatalf("launch returned %v, want cube.ErrFailed", err)
	}
}

func TestLaunchOverQuota(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-nlp"))
	if _, err := cluster.Client.Apply(ctx, tenant.New("team-nlp").Accelerators(hardware.H100, 8)); err != nil {
		t.Fatal(err)
	}
	// 2 nodes × 8 H100 in an 8-H100 tenant: the second pod is refused, as
	// the API server refuses it, and Wait says so.
	err := launch(ctx, cluster.Client, 2)
	if !errors.Is(err, cube.ErrFailed) || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("launch returned %v, want the quota refusal", err)
	}
}

// end snippet
