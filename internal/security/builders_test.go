package security_test

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
	"github.com/cubestudio/cube/tune"
)

// setting is one cell of the matrix: the hardware a builder's pods run
// on, and whether the caller gave them the restricted level's settings.
type setting struct {
	profile    hardware.Profile
	fabric     hardware.Fabric
	restricted bool
	// namespace of the objects, for builders that need one ("team-a"
	// when empty).
	namespace string
	// literal is a credential written in clear in the main container's
	// env, which every builder must refuse without repeating it.
	literal string
}

func (s setting) namespaceOr(def string) string {
	if s.namespace == "" {
		return def
	}
	return s.namespace
}

// nonRootUID is the user the restricted cases run as.
const nonRootUID = 1000

// restrictedPod and restrictedContainer are what a caller sets, through
// the pod settings every builder shares, for the restricted level.
func restrictedPod() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:   ptr.To(true),
		RunAsUser:      ptr.To[int64](nonRootUID),
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func restrictedContainer() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// on puts the setting on a builder's pod settings: the profile, one
// device when it has any, the fabric and, if asked, the restricted
// security contexts.
func on[T any](b *pod.Builder[T], s setting) {
	b.On(s.profile)
	if s.profile.Accelerated() {
		b.Accelerators(1)
	}
	if !s.fabric.IsZero() {
		b.Fabric(s.fabric)
	}
	if s.restricted {
		b.PodSecurityContext(restrictedPod())
		b.SecurityContext(restrictedContainer())
	}
	if s.literal != "" {
		b.Env("HF_TOKEN", s.literal)
	}
}

// builderCase makes one builder's workload for a setting.
type builderCase struct {
	name string
	make func(s setting) cube.Workload
}

const image = "registry.example.com/ml/train:1.0"

func registeredVersion(uri string) market.Version {
	return market.Version{Model: "support-bot", Number: 3, Artifact: market.Artifact{URI: uri}}
}

// ingress is the namespace notebooks admit traffic from.
var ingress = map[string]string{"kubernetes.io/metadata.name": "ingress-nginx"}

// verlImage gives a verl run on Ascend an image: verl publishes none.
func verlImage(r *llm.RL, s setting) {
	if s.profile.Vendor == hardware.Huawei {
		r.Job().Image("registry.example.com/verl:ascend")
	}
}

// builderCases is every builder of every package whose objects have pods,
// with the options that add containers, volumes or templates.
func builderCases() []builderCase {
	return []builderCase{
		// notebook
		{"notebook-jupyter", func(s setting) cube.Workload {
			n := notebook.Jupyter("lab", "alice").Namespace(s.namespaceOr("team-a")).Credential(pod.SecretKeyRef{Name: "alice-credentials", Key: "token"}).Storage("10Gi", "").AllowNamespace(ingress)
			on(&n.Builder, s)
			return n
		}},
		{"notebook-vscode", func(s setting) cube.Workload {
			n := notebook.VSCode("code", "alice").Namespace(s.namespaceOr("team-a")).Credential(pod.SecretKeyRef{Name: "alice-credentials", Key: "password"}).AllowNamespace(ingress)
			on(&n.Builder, s)
			return n
		}},
		{"notebook-rstudio", func(s setting) cube.Workload {
			n := notebook.RStudio("rstudio", "alice").Namespace(s.namespaceOr("team-a")).Credential(pod.SecretKeyRef{Name: "alice-credentials", Key: "password"}).AllowNamespace(ingress)
			on(&n.Builder, s)
			return n
		}},
		// train
		{"train-pytorch", func(s setting) cube.Workload {
			j := train.PyTorch("ddp").Image(image).Torchrun("train.py").Workers(2).
				PVC("datasets", "/data").EnvFromSecret("HF_TOKEN", pod.SecretKeyRef{Name: "hf", Key: "token"})
			on(&j.Builder, s)
			return j
		}},
		{"train-tensorflow", func(s setting) cube.Workload {
			j := train.TensorFlow("tf").Image(image).Command("python", "/app/train.py").Chief().ParameterServers(1).Workers(2).Evaluator()
			on(&j.Builder, s)
			return j
		}},
		{"train-mpi", func(s setting) cube.Workload {
			j := train.MPI("mpi").Image(image).Command("python", "/app/allreduce.py").Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-horovod", func(s setting) cube.Workload {
			j := train.Horovod("hvd").Image(image).Command("python", "/app/hvd.py").Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-deepspeed", func(s setting) cube.Workload {
			j := train.DeepSpeed("ds").Image(image).Torchrun("pretrain.py").Workers(2).
				Config(train.DeepSpeedConfig{ZeROStage: 2, Precision: train.BF16, MicroBatchPerGPU: 1})
			on(&j.Builder, s)
			return j
		}},
		{"train-colossalai", func(s setting) cube.Workload {
			j := train.ColossalAI("cai").Image(image).Script("train.py").Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-paddle", func(s setting) cube.Workload {
			j := train.Paddle("paddle").Image(image).Launch("train.py").Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-xgboost", func(s setting) cube.Workload {
			j := train.XGBoost("xgb").Image(image).Command("python", "/app/xgb.py").Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-mxnet", func(s setting) cube.Workload {
			j := train.MXNet("mx").Image(image).Command("python", "/app/mx.py").Servers(1).Workers(2)
			on(&j.Builder, s)
			return j
		}},
		{"train-ray", func(s setting) cube.Workload {
			j := train.Ray("ray").Image("rayproject/ray:2.40.0").Entrypoint("python /app/train.py").WorkerGroup("workers", 2)
			on(&j.Builder, s)
			return j
		}},
		{"train-volcano", func(s setting) cube.Workload {
			j := train.Volcano("vc").Image(image).Command("python", "/app/train.py").Task("worker", 2).Plugin(train.PluginSSH)
			on(&j.Builder, s)
			return j
		}},
		// llm
		{"llm-sft-lora", func(s setting) cube.Workload {
			f := llm.SFT("sft", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
				LoRA(llm.Adapter{Rank: 16, Alpha: 32}).HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).Output("pvc://models/sft")
			on(&f.Job().Builder, s)
			return f
		}},
		{"llm-dpo", func(s setting) cube.Workload {
			f := llm.DPO("dpo", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(datasets.PreferenceData("pairs", "hf://org/pairs", datasets.Alpaca)).Output("pvc://models/dpo")
			on(&f.Job().Builder, s)
			return f
		}},
		{"llm-ppo", func(s setting) cube.Workload {
			f := llm.PPO("ppo", "Qwen/Qwen2.5-7B-Instruct", "pvc://models/rm").
				AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).Output("pvc://models/ppo")
			// LLaMA-Factory's own image has a trl its PPO refuses (issue 26).
			f.Job().Image("registry.example.com/llamafactory:0.9.5-trl0.9.6")
			on(&f.Job().Builder, s)
			return f
		}},
		{"llm-merge", func(s setting) cube.Workload {
			f := llm.SFT("sft", "Qwen/Qwen2.5-7B-Instruct").
				AddDataset(datasets.InstructionData("support", "pvc://datasets/support.json", datasets.Alpaca)).
				LoRA(llm.Adapter{Rank: 8}).Output("pvc://models/sft")
			e := f.Merge("merge", "pvc://models/merged")
			on(&e.Job().Builder, s)
			return e
		}},
		{"llm-grpo", func(s setting) cube.Workload {
			r := llm.GRPO("grpo", "Qwen/Qwen2.5-7B-Instruct").
				TrainFiles("pvc://datasets/gsm8k/train.parquet").ValFiles("pvc://datasets/gsm8k/test.parquet").
				RewardFunction("pvc://datasets/reward/gsm8k.py", "compute_score").Output("pvc://models/grpo")
			on(&r.Job().WorkerGroup("gpu", 1).Builder, s)
			verlImage(r, s)
			return r
		}},
		{"llm-verl-ppo", func(s setting) cube.Workload {
			// verl's reward loop serves a sequence classifier (llm.RL.RewardModel).
			rm, _ := models.Lookup("Qwen/Qwen2.5-7B-Instruct")
			rm.Task = models.TaskClassification
			r := llm.VerlPPO("vppo", "Qwen/Qwen2.5-7B-Instruct").TrainFiles("pvc://datasets/prompts.parquet").ValFiles("pvc://datasets/prompts-val.parquet").
				RewardModel("pvc://models/rm").RewardModelFacts(rm).WandB("wandb", "key").Output("pvc://models/vppo")
			on(&r.Job().WorkerGroup("gpu", 1).Builder, s)
			verlImage(r, s)
			return r
		}},
		// serve
		{"serve-vllm", func(s setting) cube.Workload {
			v := serve.VLLM("chat", "pvc://models/chat").HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"}).APIKey(pod.SecretKeyRef{Name: "chat-key", Key: "key"})
			on(&v.Builder, s)
			return v
		}},
		{"serve-vllm-multinode", func(s setting) cube.Workload {
			v := serve.VLLM("big", "pvc://models/big").Nodes(2)
			on(&v.Builder, s)
			return v
		}},
		{"serve-sglang", func(s setting) cube.Workload {
			v := serve.SGLang("sg", "pvc://models/chat")
			on(&v.Builder, s)
			return v
		}},
		{"serve-tgi", func(s setting) cube.Workload {
			v := serve.TGI("tgi", "pvc://models/chat")
			on(&v.Builder, s)
			return v
		}},
		{"serve-tei", func(s setting) cube.Workload {
			v := serve.TEI("embed", "BAAI/bge-m3")
			on(&v.Builder, s)
			return v
		}},
		{"serve-ollama", func(s setting) cube.Workload {
			v := serve.Ollama("ollama", "qwen2.5:7b").ModelCache("ollama-models")
			on(&v.Builder, s)
			return v
		}},
		{"serve-triton-s3", func(s setting) cube.Workload {
			v := serve.Triton("resnet", "s3://models/triton/repository").S3Credentials(pod.SecretKeyRef{Name: "s3-credentials", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "s3-credentials", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio.minio:9000")
			on(&v.Builder, s)
			return v
		}},
		{"serve-mindie", func(s setting) cube.Workload {
			v := serve.MindIE("npu", "pvc://models/Qwen2.5-7B-Instruct").MaxModelLen(8192)
			on(&v.Builder, s)
			return v
		}},
		// label
		{"label-studio", func(s setting) cube.Workload {
			st := label.Studio("labels").Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-admin", Key: "token"})
			on(&st.Builder, s)
			return st
		}},
		{"label-studio-postgres", func(s setting) cube.Workload {
			st := label.Studio("labels-pg").Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-admin", Key: "token"}).Postgres(pod.SecretKeyRef{Name: "labels-db", Key: "password"}, "20Gi", "")
			on(&st.Builder, s)
			return st
		}},
		{"label-mlbackend", func(s setting) cube.Workload {
			m := label.MLBackend("judge", "registry.local/label-backend:1").Model("http://qwen-chat:8000/v1", "qwen")
			on(&m.Builder, s)
			return m
		}},
		// market
		{"market-download-hf", func(s setting) cube.Workload {
			d := market.Download("qwen", "hf://Qwen/Qwen2.5-7B-Instruct", "models").HFToken(pod.SecretKeyRef{Name: "hf", Key: "token"})
			on(&d.Builder, s)
			return d
		}},
		{"market-download-s3", func(s setting) cube.Workload {
			d := market.Download("bot", "s3://team/bot", "models").S3Credentials(pod.SecretKeyRef{Name: "minio", Key: "AWS_ACCESS_KEY_ID"}, pod.SecretKeyRef{Name: "minio", Key: "AWS_SECRET_ACCESS_KEY"}).S3Endpoint("http://minio:9000")
			on(&d.Builder, s)
			return d
		}},
		{"market-evaluate", func(s setting) cube.Workload {
			e := market.Evaluate("eval", registeredVersion("pvc://models/support-bot/v3"), "mmlu")
			on(&e.Builder, s)
			return e
		}},
		{"market-evaluate-endpoint", func(s setting) cube.Workload {
			e := market.Evaluate("eval-api", registeredVersion("pvc://models/support-bot/v3"), "mmlu").Endpoint("http://bot:8000/v1", "bot")
			on(&e.Builder, s)
			return e
		}},
		// pipeline: a container step and a workload step
		{"pipeline", func(s setting) cube.Workload {
			prep := pipeline.Container("prepare").Image("python:3.12").Command("python", "prepare.py")
			on(&prep.Builder, s)
			job := train.PyTorch("flow-train").Image(image).Torchrun("train.py")
			on(&job.Builder, s)
			return argo.Workflow(pipeline.New("flow").Kinds(train.Kinds()...).Step(prep, pipeline.Workload("train", job).After(prep)))
		}},
		// tune: the trial template
		{"tune", func(s setting) cube.Workload {
			job := train.PyTorch("trial").Image(image).Torchrun("train.py")
			on(&job.Builder, s)
			return tune.New("search").Objective(tune.Minimize("loss")).Param(tune.Float("lr", 0.001, 0.1)).
				Trial(job, tune.Arg("lr", "--lr")).MaxTrials(4)
		}},
	}
}

// podlessCases are the builders whose objects hold no pod (a canary
// split routes to Services applied on their own): they are scanned for
// credentials only.
func podlessCases() []cube.Workload {
	return []cube.Workload{
		serve.Canary("chat", serve.VLLM("chat-v1", "Qwen/Qwen2.5-7B-Instruct"), serve.VLLM("chat-v2", "Qwen/Qwen2.5-7B-Instruct")).
			Weights(90, 10).Gateway("inference", "gateway-system"),
		tenant.New("team-a").CPU("64").Accelerators(hardware.H100, 8).Editors("alice").Viewers("bob"),
		ops.Lease("h100-lease", "team-a").Holder("alice").Workload("pytorchjob", "ddp").Accelerators(hardware.H100, 8).Period(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC), time.Hour),
	}
}
