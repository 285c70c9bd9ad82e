package cubetest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pod"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// applyWaitReact is what a user's automation does with any builder: apply,
// wait, and react to the outcome (here: report it, delete a failure).
func applyWaitReact(ctx context.Context, c *cube.Client, w cube.Workload, until cube.Phase) (string, error) {
	rel, err := c.Apply(ctx, w)
	if err != nil {
		return "", err
	}
	st, err := rel.Wait(ctx, until, cube.Timeout(5*time.Second), cube.FailOnStuckPods)
	switch {
	case errors.Is(err, cube.ErrFailed):
		return "failed: " + st.Reason, rel.Delete(ctx)
	case err != nil:
		return "", err
	}
	return string(st.Phase), nil
}

// TestEveryBuilderAppliesWaitsAndReacts applies one workload of every
// builder package to the in-memory cluster, plays its controller to success
// and to failure, and checks that the user's code saw each outcome, in well
// under a second each.
func TestEveryBuilderAppliesWaitsAndReacts(t *testing.T) {
	const ns = "team-a"
	cases := []struct {
		name    string
		release string
		build   func() cube.Workload
		until   cube.Phase
		want    cube.Phase // the phase Wait returns on success
		// failure matches what the automation reports after MarkFailed;
		// empty: the message the controller gave.
		failure string
		// onlySuccess says why only the release's success is played:
		// nothing can fail it, or it is Ready as soon as it exists.
		onlySuccess string
	}{
		{"tenant", ns, func() cube.Workload {
			return tenant.New(ns).CPU("64").Memory("256Gi").Accelerators(hardware.H100, 8).Editors("alice").Viewers("bob")
		}, cube.Ready, cube.Ready, "", "nothing in a tenant has a controller to fail it"},
		{"notebook", "alice-lab", func() cube.Workload {
			return notebook.Jupyter("alice-lab", "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "alice-lab-token", Key: "token"}).Storage("10Gi", "").AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"})
		}, cube.Ready, cube.Ready, "", ""},
		{"pytorchjob", "mnist", func() cube.Workload {
			return train.PyTorch("mnist").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("mnist.py").On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"rayjob", "tune", func() cube.Workload {
			return train.Ray("tune").Namespace(ns).Image("rayproject/ray:2.40.0").Entrypoint("python tune.py").WorkerGroup("workers", 2).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"volcanojob", "hostfile", func() cube.Workload {
			return train.Volcano("hostfile").Namespace(ns).Image("busybox:1.36").Command("true").Task("worker", 2)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"vllm", "qwen", func() cube.Workload {
			return serve.VLLM("qwen", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1).Replicas(2)
		}, cube.Ready, cube.Ready, "", ""},
		{"sglang", "qwen-sgl", func() cube.Workload {
			return serve.SGLang("qwen-sgl", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"tgi", "qwen-tgi", func() cube.Workload {
			return serve.TGI("qwen-tgi", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"tei", "bge", func() cube.Workload {
			return serve.TEI("bge", "BAAI/bge-base-en-v1.5").Namespace(ns).On(hardware.L4).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"ollama", "llama", func() cube.Workload {
			return serve.Ollama("llama", "llama3.1:8b").Namespace(ns).On(hardware.L4).Accelerators(1)
		}, cube.Ready, cube.Ready, "", ""},
		{"vllm multi-node", "deepseek", func() cube.Workload {
			return serve.VLLM("deepseek", "deepseek-ai/DeepSeek-V3").Namespace(ns).On(hardware.H100).Accelerators(8).Nodes(2)
		}, cube.Ready, cube.Ready, "", ""},
		{"tfjob", "tf-ps", func() cube.Workload {
			return train.TensorFlow("tf-ps").Namespace(ns).Image("tensorflow/tensorflow:2.17.0").Command("python", "train.py").
				Workers(2).ParameterServers(1).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"mpijob", "allreduce", func() cube.Workload {
			return train.MPI("allreduce").Namespace(ns).Image("mpioperator/mpi-pi:openmpi").Command("/home/mpiuser/pi").Workers(2).On(hardware.L4).Accelerators(2)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"deepspeed", "llama-pretrain", func() cube.Workload {
			return train.DeepSpeed("llama-pretrain").Namespace(ns).Image("registry.example.com/llm/deepspeed:0.15").Torchrun("pretrain.py").
				Workers(1).On(hardware.H100).Accelerators(8).Config(train.DeepSpeedConfig{ZeROStage: 2, Precision: train.BF16, MicroBatchPerGPU: 2})
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"paddlejob", "ctr", func() cube.Workload {
			return train.Paddle("ctr").Namespace(ns).Image("paddlepaddle/paddle:2.6.1-gpu-cuda12.0-cudnn8.9-trt8.6").Launch("train.py").
				ParameterServers(1).Workers(2).On(hardware.T4).Accelerators(1)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"xgboostjob", "xgb", func() cube.Workload {
			return train.XGBoost("xgb").Namespace(ns).Image("docker.io/kubeflow/xgboost-dist-iris:latest").Command("python", "main.py").Nodes(2).On(hardware.CPU).CPU("2").Memory("4Gi")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"mxjob", "mx", func() cube.Workload {
			return train.MXNet("mx").Namespace(ns).Image("mxnet/python:1.9.1_gpu_cu112_py3").Command("python", "/mxnet/train.py").Servers(1).Workers(2).On(hardware.T4).Accelerators(1)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"llm grpo", "math", func() cube.Workload {
			grpo := llm.GRPO("math", "Qwen/Qwen2.5-7B-Instruct").TrainFiles("pvc://datasets/gsm8k/train.parquet").ValFiles("pvc://datasets/gsm8k/test.parquet").
				RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").Output("pvc://models/math")
			grpo.Job().Namespace(ns).WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
			return grpo
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"katib experiment", "search", func() cube.Workload {
			trial := train.PyTorch("search").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return tune.New("search").Namespace(ns).Objective(tune.Maximize("accuracy")).Algorithm(tune.Random()).
				Param(tune.Float("lr", 1e-4, 1e-1)).Trial(trial, tune.Arg("lr", "--lr")).MaxTrials(4)
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"llm sft", "support-bot", func() cube.Workload {
			sft := llm.SFT("support-bot", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
				LoRA(llm.Adapter{Rank: 16, Alpha: 32}).Output("pvc://models/support-bot")
			sft.Job().Namespace(ns).On(hardware.H100).Accelerators(8)
			return sft
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"pipeline", "flow", func() cube.Workload {
			prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			job := train.PyTorch("flow-train").Namespace(ns).Image("pytorch/pytorch:2.4.0").Torchrun("train.py").On(hardware.CPU).CPU("2").Memory("4Gi")
			return argo.Workflow(pipeline.New("flow").Namespace(ns).Kinds(train.Kinds()...).Step(prepare, pipeline.Workload("train", job).After(prepare)))
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"pipeline schedule", "nightly", func() cube.Workload {
			prepare := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			return argo.CronWorkflow(pipeline.New("nightly").Namespace(ns).Step(prepare), "0 2 * * *")
		}, cube.Ready, cube.Ready, "", "a CronWorkflow is Ready once it exists, so Wait returns before anything fails it (TestCronWorkflowSubmissionError)"},
		// Label Studio's claims come before its Deployments (a release
		// lists its objects by kind rank): MarkFailed loses a claim first,
		// and that is what Wait reports; the automation deletes the
		// release before Mark reaches the Deployment, which Mark then
		// skips (TestMarkSkipsWhatTheReactionDeleted). With Postgres, Mark
		// loses the data claim first, and Wait reports whichever of the
		// two lost claims comes first in apply order once it has seen them.
		{"label studio", "labels", func() cube.Workload {
			return label.Studio("labels").Namespace(ns).Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-token", Key: "token"}).Storage("20Gi", "")
		}, cube.Ready, cube.Ready, `^failed: PersistentVolumeClaim team-a/labels-data Failed \(Lost\)$`, ""},
		{"label studio with postgres", "labels-pg", func() cube.Workload {
			return label.Studio("labels-pg").Namespace(ns).Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-token", Key: "token"}).
				Postgres(pod.SecretKeyRef{Name: "labels-db", Key: "password"}, "10Gi", "")
		}, cube.Ready, cube.Ready, `^failed: PersistentVolumeClaim team-a/labels-pg-(data|postgres) Failed \(Lost\)$`, ""},
		{"label ml backend", "judge", func() cube.Workload {
			return label.MLBackend("judge", "registry.local/label-backend:1").Namespace(ns).
				Model("http://qwen-chat:8000/v1", "qwen").APIKey(pod.SecretKeyRef{Name: "qwen", Key: "key"}).ModelVersion("qwen@1")
		}, cube.Ready, cube.Ready, "", ""},
		{"serve canary split", "chat-split", func() cube.Workload {
			return serve.Canary("chat-split",
				serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1),
				serve.VLLM("chat-v2", "Qwen/Qwen2.5-14B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)).
				Namespace(ns).Weights(90, 10).Gateway("inference", "gateways")
		}, cube.Ready, cube.Ready, "", ""},
		{"market download", "qwen-download", func() cube.Workload {
			return market.Download("qwen-download", "hf://Qwen/Qwen2.5-7B-Instruct@main", "models").Namespace(ns).HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"})
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"market evaluate", "eval-bot", func() cube.Workload {
			v := market.Version{Model: "support-bot", Number: 3, Artifact: market.Artifact{
				URI: "pvc://models/support-bot/v3", Format: "safetensors", DType: models.BF16,
			}}
			return market.Evaluate("eval-bot", v, "mmlu", "gsm8k").Namespace(ns).Endpoint("http://support-bot-api.team-a:8000", "support-bot")
		}, cube.Succeeded, cube.Succeeded, "", ""},
		{"ops lease", "alice-h100", func() cube.Workload {
			return ops.Lease("alice-h100", ns).Holder("alice").Workload(notebook.Kind, "alice-lab").Accelerators(hardware.H100, 1).
				Period(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), 8*time.Hour)
		}, cube.Ready, cube.Ready, "", "a Lease has no controller: ops.Enforcer acts on it (TestLeaseEnforcerStopsTheLeasedNotebook)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			outcomes := []cube.Phase{cube.Succeeded, cube.Failed}
			if tc.onlySuccess != "" {
				outcomes = outcomes[:1]
			}
			for _, outcome := range outcomes {
				ctx := t.Context()
				cluster := cubetest.NewCluster(nil, cube.Namespace(ns))
				start := time.Now()
				done := make(chan struct{})
				var got string
				var err error
				go func() {
					defer close(done)
					got, err = applyWaitReact(ctx, cluster.Client, tc.build(), tc.until)
				}()
				// The automation may fail before it records anything: stop
				// looking for the release then.
				found, cancel := context.WithTimeout(ctx, 2*time.Second)
				go func() { <-done; cancel() }()
				rel, werr := cluster.WaitForRelease(found, ns, tc.release)
				switch {
				case werr != nil && tc.onlySuccess != "":
					// Ready as soon as applied: the automation may be done
					// before the test looks.
					<-done
					require.NoError(t, err, "apply, wait and react")
				case werr != nil:
					<-done
					require.NoError(t, err, "apply, wait and react")
					require.NoError(t, werr)
				case outcome == cube.Failed:
					require.NoError(t, cluster.MarkFailed(ctx, rel, "Boom", "the controller gave up"))
					// A StatefulSet never fails by itself: a crashing pod is
					// what the automation reacts to.
					require.NoError(t, cluster.AddPod(ctx, rel, tc.release+"-crashing", "CrashLoopBackOff", "the controller gave up"))
				default:
					require.NoError(t, cluster.MarkSucceeded(ctx, rel))
				}
				<-done
				require.NoError(t, err)
				if outcome == cube.Failed {
					assert.Contains(t, got, "failed: ")
					if tc.failure == "" {
						assert.Contains(t, got, "the controller gave up")
					} else {
						assert.Regexp(t, tc.failure, got)
					}
					rels, lerr := cluster.Client.Releases(ctx, "")
					require.NoError(t, lerr)
					assert.Empty(t, rels, "the automation deleted the failed release")
				} else {
					assert.Equal(t, string(tc.want), got)
				}
				assert.Less(t, time.Since(start), time.Second, "apply, wait and react take well under a second in memory")
			}
		})
	}
}
