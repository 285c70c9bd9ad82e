package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client/config"
	vcscheduling "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pipeline/local"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

func main() {
	apply := flag.Bool("apply", false, "apply to the cluster KUBECONFIG points at and wait")
	namespace := flag.String("namespace", "team-nlp", "the team's namespace")
	wait := flag.Duration("wait", 10*time.Minute, "how long -apply waits for each release")
	size := gpuCluster()
	flag.BoolVar(&size.small, "small", false, "size the journey for a small cluster: training on CPU without Volcano, Qwen2.5-7B on T4s")
	flag.StringVar(&size.trainImage, "train-image", size.trainImage, "the training job's image (with torch)")
	flag.StringVar(&size.stepImage, "step-image", size.stepImage, "the pipeline's container steps' image (with python3)")
	flag.StringVar(&size.serveImage, "serve-image", size.serveImage, "the vLLM image (default: serve's)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, *namespace, *apply, *wait, size); err != nil {
		log.Fatal(err)
	}
}

// sizing is what the journey runs on: the GPU cluster the README shows (4
// nodes × 8 H100 over InfiniBand, gang-scheduled by Volcano, Qwen2.5-72B), or,
// with small, a cluster of one node with a T4 and no Volcano (kind,
// minikube, cube's own test cluster).
type sizing struct {
	small                             bool
	trainImage, stepImage, serveImage string
}

func gpuCluster() sizing {
	return sizing{trainImage: "nvcr.io/nvidia/pytorch:24.05-py3", stepImage: "python:3.12"}
}

// smallTrainer is the small journey's training program: two ranks of
// torch.distributed over gloo on CPU average a "gradient".
const smallTrainer = `import torch, torch.distributed as dist
dist.init_process_group("gloo")
g = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(g)
print(f"rank {dist.get_rank()}/{dist.get_world_size()} mean gradient {g.item() / dist.get_world_size()}", flush=True)
dist.destroy_process_group()`

func run(ctx context.Context, out io.Writer, ns string, apply bool, wait time.Duration, size sizing) error {
	workloads, err := journey(ctx, out, ns, size)
	if err != nil || !apply {
		return err
	}
	cfg, err := config.GetConfig()
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	c, err := cube.New(cfg, clientOptions(ns, size)...)
	if err != nil {
		return err
	}
	return applyAll(ctx, c, wait, workloads, log.Printf)
}

// clientOptions are the options of the journey's client: the team's
// namespace, and the kinds it waits on beyond the Kubernetes API's own
// (the PyTorchJob, the pipeline's Workflow, a multi-node service's
// LeaderWorkerSet), which a client not given them reads Unknown. A small
// cluster runs no Volcano controller to open the tenant's queue (cube
// reads a Queue Ready once Volcano has opened it) and the small journey
// schedules nothing through it, so there the queue is Ready once it exists.
func clientOptions(ns string, size sizing) []cube.Option {
	opts := []cube.Option{cube.Namespace(ns), cube.Kinds(kinds.All()...)}
	if size.small {
		opts = append(opts, cube.Kinds(queueExists))
	}
	return opts
}

// queueExists reads a Volcano Queue as Ready once it exists.
var queueExists = cube.ExistsKind(vcscheduling.SchemeGroupVersion.WithKind("Queue").GroupKind())

// journey builds the team's tenant, the pipeline that runs its training
// job and the served model, runs the pipeline locally, prints them to out,
// and returns the workloads to apply: each once, in that order.
func journey(ctx context.Context, out io.Writer, ns string, size sizing) ([]cube.Workload, error) {
	// 1. A team: namespace, quota, queue, access. Its training runs over
	// InfiniBand, whose IPC_LOCK capability the default (baseline) Pod
	// Security level refuses: the tenant opts in.
	team := tenant.New(ns).
		Editors("alice@example.com").Viewers("bob@example.com").
		CPU("512").Memory("4Ti").Pods(200).Storage("20Ti").
		Accelerators(hardware.H100, 32).
		QueueWeight(2)
	if !size.small {
		team.AllowRDMA()
	}

	// 2. Distributed fine-tuning: 4 nodes (the Master and 3 Workers) × 8
	// H100 over InfiniBand. Moving it to Ascend is one argument:
	// On(hardware.Ascend910B3). It is not applied on its own: the
	// pipeline below runs it as its training step.
	sft := train.PyTorch("llama-sft").Namespace(ns).
		Image(size.trainImage).
		EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf-token", Key: "token"})
	if size.small {
		sft.Command("python3", "-c", smallTrainer).Workers(1).CPU("500m").Memory("1Gi")
	} else {
		sft.Torchrun("/workspace/sft.py", "--model", "meta-llama/Llama-3.1-8B", "--bf16").
			Nodes(4).
			On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).
			CPU("64").Memory("512Gi").
			PVC("datasets", "/data").
			Queue(ns).Gang()
	}

	// 3. The pipeline prepare → train → evaluate: first run here as Go
	// functions, then compiled for Argo with the PyTorchJob above as its
	// training step, which Argo creates and waits on.
	result, err := runLocally(ctx)
	if err != nil {
		return nil, err
	}
	prepare := pipeline.Container("prepare").Image(size.stepImage).
		Command("python", "/workspace/prepare.py", "--out", pipeline.OutputFile("rows")).
		Outputs("rows")
	evaluate := pipeline.Container("evaluate").Image(size.stepImage).
		Command("python", "/workspace/evaluate.py", "--rows", prepare.Output("rows"))
	if size.small {
		prepare.Command("python3", "-c", `import sys; open(sys.argv[1], "w").write("3")`, pipeline.OutputFile("rows")).
			CPU("100m").Memory("128Mi")
		evaluate.Command("python3", "-c", `import sys; print("evaluated", sys.argv[1], "rows")`, prepare.Output("rows")).
			CPU("100m").Memory("128Mi")
	}
	finetune := pipeline.Workload("train", sft).After(prepare)
	evaluate.After(finetune)
	flow := argo.Workflow(pipeline.New("sft-flow").Namespace(ns).ServiceAccount(tenant.PipelineServiceAccount).
		Kinds(train.Kinds()...). // Argo waits on the PyTorchJob with train's completion conditions
		Step(prepare, finetune, evaluate))

	// 4. Serving: the planner sizes Qwen2.5-72B on H100s, and Auto applies it.
	model, accel, ctxLen := "Qwen/Qwen2.5-72B-Instruct", hardware.H100, 32768
	if size.small {
		model, accel, ctxLen = "Qwen/Qwen2.5-7B-Instruct", hardware.T4, 4096
	}
	qwen, err := models.Lookup(model)
	if err != nil {
		return nil, err
	}
	plan, err := serve.Plan(qwen, accel, serve.ContextLength(ctxLen))
	if err != nil {
		return nil, err
	}
	chat := serve.VLLM("qwen-chat", "hf://"+model).Namespace(ns).
		On(accel).Auto(serve.ContextLength(ctxLen)).
		HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).
		Autoscale(1, 4, serve.ScaleOnQueue("10"))
	if size.serveImage != "" {
		chat.Image(size.serveImage)
	}
	if size.small {
		chat.CPU("100m").Memory("256Mi")
	}

	comment(out, "cube quickstart: tenant, pipeline (its training step is the PyTorchJob llama-sft), served model")
	comment(out, "")
	comment(out, "pipeline ran locally in "+result.Duration.Round(time.Millisecond).String()+": "+string(result.Phase))
	for _, s := range result.Steps {
		comment(out, fmt.Sprintf("  %-9s %-9s outputs=%v", s.Name, s.Phase, s.Outputs))
	}
	comment(out, "")
	comment(out, result.Mermaid())
	comment(out, "")
	comment(out, "serving plan: "+plan.String())
	comment(out, "")

	// The tenant's Pod Security level admits every pod of the workloads,
	// the training step's included (Apply checks it again against the
	// namespace).
	if err := tenant.Admits(team, flow, chat); err != nil {
		return nil, err
	}
	// Each workload once: the training job runs inside the pipeline.
	workloads := []cube.Workload{team, flow, chat}
	for i, w := range workloads {
		if i > 0 {
			fmt.Fprintln(out, "---")
		}
		if err := cube.Render(out, w); err != nil {
			return nil, err
		}
	}
	return workloads, nil
}

// runLocally runs prepare → train → evaluate in-process, as Go functions.
func runLocally(ctx context.Context) (*local.Result, error) {
	prepare := pipeline.Func("prepare", func(ctx context.Context, t *pipeline.Task) error {
		rows := 0
		for _, line := range strings.Split("the quick brown fox\njumps over\nthe lazy dog", "\n") {
			if line != "" {
				rows++
			}
		}
		return t.SetOutput("rows", fmt.Sprint(rows))
	}).Outputs("rows")
	fit := pipeline.Func("train", func(ctx context.Context, t *pipeline.Task) error {
		t.Logf("training on %s rows", t.Input("rows"))
		return t.SetOutput("loss", "0.42")
	}).Input("rows", prepare.Output("rows")).Outputs("loss")
	evaluate := pipeline.Func("evaluate", func(ctx context.Context, t *pipeline.Task) error {
		if t.Input("loss") == "" {
			return errors.New("no loss from train")
		}
		return t.SetOutput("accuracy", "0.91")
	}).Input("loss", fit.Output("loss")).Outputs("accuracy")

	dir, err := os.MkdirTemp("", "cube-quickstart-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	return local.Run(ctx, pipeline.New("sft-local").Step(prepare, fit, evaluate), local.RunDir(dir), local.Progress(io.Discard))
}

// applyAll applies each workload as its own release and waits for it,
// logging progress with logf.
func applyAll(ctx context.Context, c *cube.Client, wait time.Duration, ws []cube.Workload, logf func(format string, args ...any)) error {
	for _, w := range ws {
		rel, err := c.Apply(ctx, w)
		if err != nil {
			return err
		}
		logf("applied %s/%s (%d objects, %d pruned)", rel.Namespace, rel.Name, len(rel.Objects), len(rel.Pruned))
		// Progress lines say what stuck pods wait on (a full GPU pool, an
		// image that cannot be pulled); a pod that cannot recover by
		// itself ends the wait at once.
		st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(wait), cube.FailOnStuckPods, cube.OnProgress(func(s cube.Status) {
			logf("%s: %s", rel.Name, s)
		}))
		if err != nil {
			return err
		}
		logf("%s: %s", rel.Name, st.Phase)
	}
	return nil
}

// comment writes s as YAML comment lines.
func comment(w io.Writer, s string) {
	for line := range strings.SplitSeq(s, "\n") {
		fmt.Fprintln(w, strings.TrimRight("# "+line, " "))
	}
}
