package llm_test

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/train"
)

// A fuzz program is a byte string: the constructor, then method calls,
// each an index into the method table and the bytes its arguments are
// drawn from (dictionaries mixing valid and hostile values).
type program = fuzzcorpus.Program

func pick[T any](p *program, values []T) T { return fuzzcorpus.Pick(p, values) }

var (
	fuzzInts    = []int{1, 8, 0, -1, 3, 4, 16, 65536, math.MaxInt32}
	fuzzFloats  = []float64{0.1, 1e-4, 0, -1, 1, 0.99, math.NaN(), math.Inf(1), 5}
	fuzzModels  = []string{qwen, "hf://meta-llama/Llama-3.1-8B-Instruct", "modelscope://Qwen/Qwen2.5-7B-Instruct", "pvc://models/qwen", "s3://b/m", "", "bad model", "org/unknown", "hf://org/m@main"}
	fuzzSources = []string{"pvc://datasets/a.json", "hf://org/ds", "modelscope://org/ds", "s3://bucket/key.json", "s3://bucket", "pvc://only", "", "ftp://x", "bad source"}
	fuzzNames   = []string{"a", "b", "", "with space", "a,b", "support"}
	fuzzStrings = []string{"", "qwen", "cosine", "linear", "zigzag", "wandb", "tensorboard", "none", "sigmoid", "orpo", "simpo", "q_proj", "a,b", "all"}
	fuzzFormats = []datasets.Format{datasets.Alpaca, datasets.ShareGPT, "csv", ""}
	fuzzKinds   = []datasets.Kind{datasets.Instructions, datasets.Preferences, datasets.KTOLabels, "other"}
	fuzzPrec    = []train.Precision{train.BF16, train.FP16, train.FP32, "int3"}
	fuzzOutputs = []string{"pvc://models/out", "pvc://models", "hf://org/x", "", "pvc://m/o"}
)

func dataset(p *program) datasets.Dataset {
	return datasets.Dataset{Name: pick(p, fuzzNames), Source: pick(p, fuzzSources), Format: pick(p, fuzzFormats), Kind: pick(p, fuzzKinds),
		Samples: pick(p, fuzzInts), Columns: map[string]string{pick(p, []string{"prompt", "bogus", "chosen"}): pick(p, fuzzNames)}}
}

// constructors start from a fine-tune that validates (the first three:
// most programs pick them, and the calls after make them wrong or not) or
// from a bare, zero or nil one.
var constructors = []func(p *program) *llm.FineTune{
	func(p *program) *llm.FineTune {
		return llm.SFT(pick(p, fuzzNames), qwen).AddDataset(alpaca).Output("pvc://models/out")
	},
	func(p *program) *llm.FineTune {
		return llm.DPO(pick(p, fuzzNames), qwen).AddDataset(pairs).Output("pvc://models/out")
	},
	func(p *program) *llm.FineTune {
		return llm.KTO(pick(p, fuzzNames), qwen).AddDataset(ktoLabels).Output("pvc://models/out")
	},
	func(p *program) *llm.FineTune { return llm.SFT(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune { return llm.RewardModel(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune { return llm.DPO(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune { return llm.ORPO(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune { return llm.SimPO(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune { return llm.KTO(pick(p, fuzzNames), pick(p, fuzzModels)) },
	func(p *program) *llm.FineTune {
		return llm.PPO(pick(p, fuzzNames), pick(p, fuzzModels), pick(p, fuzzModels))
	},
	func(p *program) *llm.FineTune { return nil },
	func(p *program) *llm.FineTune { return &llm.FineTune{} },
}

var methods = []func(f *llm.FineTune, p *program){
	func(f *llm.FineTune, p *program) { f.AddDataset(dataset(p)) },
	func(f *llm.FineTune, p *program) { f.AddEvalDataset(dataset(p)) },
	func(f *llm.FineTune, p *program) { f.Output(pick(p, fuzzOutputs)) },
	func(f *llm.FineTune, p *program) {
		f.LoRA(llm.Adapter{Rank: pick(p, fuzzInts), Alpha: pick(p, fuzzInts), Dropout: pick(p, fuzzFloats), Targets: []string{pick(p, fuzzStrings)}})
	},
	func(f *llm.FineTune, p *program) { f.QLoRA(pick(p, fuzzInts), llm.Adapter{Rank: pick(p, fuzzInts)}) },
	func(f *llm.FineTune, p *program) { f.FullTuning() },
	func(f *llm.FineTune, p *program) { f.FreezeTuning(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.Batch(pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.LearningRate(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.Epochs(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.MaxSteps(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.LRScheduler(pick(p, fuzzStrings)) },
	func(f *llm.FineTune, p *program) { f.Precision(pick(p, fuzzPrec)) },
	func(f *llm.FineTune, p *program) { f.ZeRO(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.OffloadOptimizer() },
	func(f *llm.FineTune, p *program) { f.OffloadParams() },
	func(f *llm.FineTune, p *program) { f.ValidationSplit(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.EvalEvery(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.CutoffLength(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.Template(pick(p, fuzzStrings)) },
	func(f *llm.FineTune, p *program) { f.ReportTo(pick(p, fuzzStrings)) },
	func(f *llm.FineTune, p *program) { f.PreferenceLoss(pick(p, fuzzStrings)) },
	func(f *llm.FineTune, p *program) { f.Beta(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.SimPOGamma(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.SFTWeight(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.KTOWeights(pick(p, fuzzFloats), pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.ResumeFrom(pick(p, fuzzModels)) },
	func(f *llm.FineTune, p *program) { f.FullRewardModel() },
	func(f *llm.FineTune, p *program) {
		f.RewardServer(pick(p, []string{rewardServer, "http://u:p@rm/score/evaluation", "http://rm:8000/v1", "https://", "ftp://rm/x"}))
	},
	func(f *llm.FineTune, p *program) { f.PPOEpochs(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.GradientClipping(pick(p, fuzzFloats)) },
	func(f *llm.FineTune, p *program) { f.WarmupSteps(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) { f.SaveEvery(pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) {
		f.HFToken(pod.SecretKeyRef{Name: pick(p, fuzzNames), Key: pick(p, fuzzNames)})
	},
	func(f *llm.FineTune, p *program) { f.WandB(pick(p, fuzzNames), pick(p, fuzzNames)) },
	func(f *llm.FineTune, p *program) {
		f.Job().On(pick(p, []hardware.Profile{hardware.H100, hardware.Ascend910B3, hardware.CPU, hardware.L4})).Accelerators(pick(p, fuzzInts))
	},
	func(f *llm.FineTune, p *program) { f.Job().Nodes(pick(p, fuzzInts)) },
	func(f *llm.FineTune, p *program) {
		f.Job().Env(pick(p, []string{"HF_TOKEN", "X"}), "hf_abcdefghijklmnopqrstuvwxyz")
	},
	func(f *llm.FineTune, p *program) {
		f.Job().Image(pick(p, []string{"", llm.DefaultImage, llm.DefaultAscendImage, "registry.example.com/lf:1"}))
	},
	func(f *llm.FineTune, p *program) { f.Facts(pick(p, fuzzFacts)) },
}

// fineTuneSeeds are FuzzFineTune's seeds; TestFuzzCorpusApplies runs them too.
var fineTuneSeeds = [][]byte{
	{0, 0},
	{1, 0, 21, 8, 22, 3},
	{2, 2, 14, 2},
	{3, 0, 0, 0, 0, 0, 0, 2, 0},
	{5, 0, 0, 0, 1, 1, 0, 2, 0, 21, 8, 22, 3},
	{9, 0, 0, 3, 0, 0, 0, 0, 0, 2, 0, 5, 27, 17, 2},
	{10, 0, 1, 2},
}

// runFineTune interprets a FuzzFineTune program: a constructor, then at
// most 64 method calls.
func runFineTune(data []byte) *llm.FineTune {
	p := fuzzcorpus.NewProgram(data)
	ft := pick(p, constructors)(p)
	for steps := 0; !p.Done() && steps < 64; steps++ {
		pick(p, methods)(ft, p)
	}
	return ft
}

// FuzzFineTune drives the builders with random call sequences: Objects
// never panics, a success has the three objects with parseable configs
// that keep LLaMA-Factory's contract and no secret literal, and a failure
// is an aggregate of field errors.
func FuzzFineTune(f *testing.F) {
	for _, seed := range fineTuneSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ft := runFineTune(data)
		objs, err := ft.Objects()
		if err != nil {
			fuzzcorpus.FieldErrors(t, err)
			return
		}
		require.Len(t, objs, 3)
		assert.NoError(t, checkFineTune(t, fuzzContract(), objs))
		cm := objs[0].(*corev1.ConfigMap)
		var cfg map[string]any
		require.NoError(t, yaml.Unmarshal([]byte(cm.Data[llm.ConfigKey]), &cfg))
		rendered, err := yaml.Marshal(objs)
		require.NoError(t, err)
		// No literal under a secret-named variable (pod.SecretLiteral's
		// rule: the name decides, so X=hf_… passes, HF_TOKEN=hf_… never).
		var tree any
		require.NoError(t, yaml.Unmarshal(rendered, &tree))
		for _, e := range envVars(tree) {
			assert.False(t, podspec.SecretLiteral(e["name"], e["value"]), "a secret literal in env %s", e["name"])
		}
		assert.False(t, strings.Contains(cm.Data[llm.ConfigKey], "NaN"))
		_, _ = llm.Plan(ft, hardware.H100, llm.Tokens(1000))
	})
}

// fuzzContract is the LLaMA-Factory contract, loaded once for every
// fuzz input.
var fuzzContract = sync.OnceValue(func() *contract.Contract {
	c, err := contract.Load("testdata/contracts/llamafactory.tsv")
	if err != nil {
		panic(err)
	}
	return c
})

var rlMethods = []func(r *llm.RL, p *program){
	func(r *llm.RL, p *program) { r.TrainFiles(pick(p, fuzzSources)) },
	func(r *llm.RL, p *program) { r.ValFiles(pick(p, fuzzSources)) },
	func(r *llm.RL, p *program) { r.RewardFunction(pick(p, fuzzSources), pick(p, fuzzNames)) },
	func(r *llm.RL, p *program) { r.RewardModel(pick(p, fuzzModels)) },
	func(r *llm.RL, p *program) { r.Critic(pick(p, fuzzModels)) },
	func(r *llm.RL, p *program) { r.Batch(pick(p, fuzzInts), pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) { r.Lengths(pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) { r.Samples(pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) { r.LearningRate(pick(p, fuzzFloats)) },
	func(r *llm.RL, p *program) { r.KLCoefficient(pick(p, fuzzFloats)) },
	func(r *llm.RL, p *program) { r.LoRA(pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) {
		r.Rollout(pick(p, []string{"vllm", "sglang", "tgi", ""}), pick(p, fuzzInts), pick(p, fuzzFloats))
	},
	func(r *llm.RL, p *program) { r.Epochs(pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) { r.SaveEvery(pick(p, fuzzInts), pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) { r.Output(pick(p, fuzzOutputs)) },
	func(r *llm.RL, p *program) { r.PromptKey(pick(p, fuzzNames)) },
	func(r *llm.RL, p *program) { r.WandB(pick(p, fuzzNames), pick(p, fuzzNames)) },
	func(r *llm.RL, p *program) { r.Job().WorkerGroup(pick(p, fuzzNames), pick(p, fuzzInts)) },
	func(r *llm.RL, p *program) {
		r.Job().On(pick(p, []hardware.Profile{hardware.H100, hardware.Ascend910B3, hardware.CPU})).Accelerators(pick(p, fuzzInts))
	},
	func(r *llm.RL, p *program) { r.Job().Image(pick(p, []string{"", "registry.example.com/verl:1"})) },
	func(r *llm.RL, p *program) { r.OffloadParams() },
	func(r *llm.RL, p *program) { r.OffloadOptimizer() },
	func(r *llm.RL, p *program) { r.Facts(pick(p, fuzzFacts)) },
	func(r *llm.RL, p *program) { r.RewardModelFacts(pick(p, fuzzFacts)).CriticFacts(pick(p, fuzzFacts)) },
}

// fuzzFacts are a catalogued architecture and an empty one.
var fuzzFacts = []models.Model{mustLookup(qwen), {}}

// envVars returns every name/value pair of an env list in a rendered
// object tree.
func envVars(tree any) []map[string]string {
	var out []map[string]string
	switch v := tree.(type) {
	case map[string]any:
		for k, child := range v {
			if list, ok := child.([]any); ok && k == "env" {
				for _, item := range list {
					if m, ok := item.(map[string]any); ok {
						name, _ := m["name"].(string)
						value, _ := m["value"].(string)
						out = append(out, map[string]string{"name": name, "value": value})
					}
				}
				continue
			}
			out = append(out, envVars(child)...)
		}
	case []any:
		for _, child := range v {
			out = append(out, envVars(child)...)
		}
	}
	return out
}

// rlSeeds are FuzzRL's seeds; TestFuzzCorpusApplies runs them too.
var rlSeeds = [][]byte{
	{0, 0},
	{1, 5, 10, 0},
	{2, 0, 0, 0, 2, 0, 0, 14, 0, 17, 0, 0, 18, 0, 1},
	{3, 0, 0, 3, 0, 14, 0, 17, 0, 1, 18, 0, 1},
	{5},
}

// runRL interprets a FuzzRL program: a constructor (a GRPO or PPO that
// validates, a bare GRPO or PPO, a zero value or nil), then at most 64 method calls.
func runRL(data []byte) *llm.RL {
	p := fuzzcorpus.NewProgram(data)
	var r *llm.RL
	switch p.Byte() % 6 {
	case 0: // one that validates
		r = llm.GRPO(pick(p, fuzzNames), qwen).TrainFiles("pvc://datasets/train.parquet").ValFiles("pvc://datasets/val.parquet").
			RewardFunction("pvc://datasets/reward.py", "score").Output("pvc://models/out")
		r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	case 1:
		r = llm.VerlPPO(pick(p, fuzzNames), qwen).TrainFiles("pvc://datasets/train.parquet").ValFiles("pvc://datasets/val.parquet").
			RewardModel("pvc://models/rm").RewardModelFacts(rewardClassifier()).Output("pvc://models/out")
		r.Job().WorkerGroup("gpu", 1).On(hardware.H100).Accelerators(8)
	case 2:
		r = llm.GRPO(pick(p, fuzzNames), pick(p, fuzzModels))
	case 3:
		r = llm.VerlPPO(pick(p, fuzzNames), pick(p, fuzzModels))
	case 4:
		r = &llm.RL{}
	}
	for steps := 0; !p.Done() && steps < 64; steps++ {
		pick(p, rlMethods)(r, p)
	}
	return r
}

// FuzzRL drives the verl builders: Objects never panics, a success is
// one RayJob whose entrypoint is verl's, a failure field errors.
func FuzzRL(f *testing.F) {
	for _, seed := range rlSeeds {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := runRL(data)
		// The planner never panics on what the builder holds.
		_, _ = llm.PlanRL(r, hardware.H100, llm.Tokens(1000), llm.AllowOffload)
		objs, err := r.Objects()
		if err != nil {
			fuzzcorpus.FieldErrors(t, err)
			return
		}
		require.Len(t, objs, 1)
		rendered, err := yaml.Marshal(objs)
		require.NoError(t, err)
		assert.Contains(t, string(rendered), "verl.trainer.main_ppo")
	})
}
