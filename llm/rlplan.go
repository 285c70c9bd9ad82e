package llm

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

// verl's rollout engine limits at v0.7.0 (actor_rollout_ref.rollout and
// reward_model.rollout max_num_batched_tokens and max_num_seqs in
// verl/trainer/config/_generated_ppo_trainer.yaml): the batch the vLLM
// activation reserve is sized for.
const (
	verlMaxBatchedTokens = 8192
	verlMaxSequences     = 1024
)

// ComputeTerm is one pass of a verl step over every trained token:
// Multiple × Parameters FLOPs a token.
type ComputeTerm struct {
	// Pass names it: "actor update", "old log-probs", "reference
	// log-probs", "critic values", "critic update".
	Pass string
	// Multiple is 2 for a forward pass, 6 for forward and backward (4 when
	// only adapters train), +2 when activations are recomputed.
	Multiple int
	// Parameters is the active parameter count of the model the pass runs.
	Parameters int64
}

// RLPlan is how a verl run (GRPO or PPO) is laid out on an accelerator,
// what each device holds in each phase of a step, and how long and how
// much it takes. PlanRL makes one.
//
// verl's hybrid engine (actor_rollout_ref.hybrid_engine, the only mode at
// v0.7.0: RayPPOTrainer asserts it in verl/trainer/ppo/ray_trainer.py)
// puts every role in one worker group on every device
// (verl/trainer/ppo/ray_trainer.py init_workers,
// create_colocated_worker_cls): the actor, the vLLM or SGLang rollout,
// the reference, a PPO critic and a served reward model share each
// device's memory and take turns. The figures are per device for each
// phase; NeedBytesPerDevice is the largest.
type RLPlan struct {
	Model, Accelerator string
	Algorithm          Algorithm

	// Accelerators is trainer.nnodes × trainer.n_gpus_per_node; FSDP shards the
	// actor (and critic) over all of them (fsdp_size -1).
	Accelerators, Nodes, AcceleratorsPerNode int
	// UsesReference says a KL term is on (KLCoefficient > 0), for which
	// verl creates the reference policy (main_ppo.py
	// add_ref_policy_worker).
	UsesReference bool
	// OffloadParams and OffloadOptimizer are the actor's and critic's
	// fsdp_config.param_offload and optimizer_offload.
	OffloadParams, OffloadOptimizer bool

	// Parameters is the policy's; TrainableParameters what trains (the
	// LoRA adapter for LoRA); CriticParameters the critic's (PPO), the
	// policy's without its output head plus a one-wide score head;
	// RewardParameters the served reward model's (0 for a function).
	Parameters, TrainableParameters, CriticParameters, RewardParameters int64

	// ActorStateBytesPerDevice is the actor's fp32 parameters, gradients
	// and Adam moments on one device while it updates: (4Ψ + 12Ψ_t)/N.
	ActorStateBytesPerDevice int64
	// ActorResidentBytesPerDevice is what the actor keeps on the device
	// outside its update: the same, less what is offloaded.
	ActorResidentBytesPerDevice int64
	// ActorGatheredBytesPerDevice is what FSDP gathers to compute: the bf16
	// root unit (embeddings, head, final norm), two decoder layers (one
	// computing, one prefetched) and one layer's fp32 gradient before its
	// reduce-scatter.
	ActorGatheredBytesPerDevice int64
	// ActorActivationBytesPerDevice is one actor micro batch
	// (ppo_micro_batch_size_per_gpu sequences of prompt + response tokens).
	ActorActivationBytesPerDevice int64
	// The critic's figures, as the actor's (PPO only).
	CriticStateBytesPerDevice, CriticResidentBytesPerDevice      int64
	CriticGatheredBytesPerDevice, CriticActivationBytesPerDevice int64
	// Rollout is serve.Plan's layout of the policy in the rollout engine's
	// memory share (gpu_memory_utilization × device memory): weights,
	// vLLM's activation reserve and the KV cache.
	Rollout serve.PlanResult
	// RolloutReplicas is Accelerators / tensor parallelism; SequencesPerReplica
	// the responses of a step each generates (prompts × samples /
	// replicas, rounded up). Rollout.MaxConcurrentSequences of them run at
	// once at full length; more wait for the next wave.
	RolloutReplicas, SequencesPerReplica int
	// Reward is serve.Plan's layout of a served reward model in the same
	// share; HasRewardModel says there is one.
	Reward         serve.PlanResult
	HasRewardModel bool
	// OverheadBytesPerDevice is the CUDA (or CANN) context, communication
	// buffers and fragmentation.
	OverheadBytesPerDevice int64

	// Need of each phase, per device: the actor's update (its states,
	// gathered units and activations, and the critic's resident states);
	// the critic's update (PPO); generation (the resident states and the
	// rollout engine's share); scoring by a served reward model.
	ActorUpdateBytes, CriticUpdateBytes, RolloutBytes, RewardBytes int64
	// NeedBytesPerDevice is the largest phase; DeviceBytes one device's
	// memory as the driver reports it (serve's figure, of which the engine
	// takes its share).
	NeedBytesPerDevice, DeviceBytes int64
	// CPUBytesPerNode is what the FSDP workers of one node keep in CPU
	// memory: the reference's fp32 parameters (FSDP's own CPU offload,
	// which verl forces on the reference) and the offloaded states.
	CPUBytesPerNode int64

	// PromptsPerStep, Samples, SequenceLength (prompt + response) and
	// MicroBatch are the batch the figures are sized for.
	PromptsPerStep, Samples, SequenceLength, MicroBatch int

	// TrainingTokens is Tokens × total_epochs; Compute the passes over
	// them; FLOPs Σ Multiple × Parameters × TrainingTokens.
	TrainingTokens int64
	Compute        []ComputeTerm
	FLOPs          float64
	// PeakTFLOPS is one device's dense bf16 peak; MFU the assumed
	// utilisation of the training passes.
	PeakTFLOPS, MFU float64
	// RolloutShare is the assumed share of wall time spent generating and
	// scoring (RolloutShare option, DefaultRolloutShare).
	RolloutShare float64
	// TrainingHours is FLOPs / (Accelerators × peak × MFU); Hours TrainingHours
	// / (1 − RolloutShare); DeviceHours Hours × Accelerators; Cost DeviceHours
	// × the price.
	TrainingHours, Hours, DeviceHours, Cost float64
	PricePerDeviceHour                      float64
	HasPrice                                bool
}

// PlanRL finds the smallest number of accelerators of profile acc, with
// the fewest offloads (only with AllowOffload), that hold the verl run r
// in every phase of its step, and estimates its time and cost. It takes
// Tokens (the tokens one epoch puts through the actor: prompts × samples ×
// their mean prompt + response length; PlanRL multiplies it by
// trainer.total_epochs),
// MFU, Prices, MaxNodes, AllowOffload, RolloutShare, Overhead and
// AttentionMaps.
//
// Per device, with N devices, Ψ the policy's parameters and Ψ_t what
// trains (verl/workers/fsdp_workers.py at v0.7.0):
//
//   - actor: created in fsdp_config.model_dtype, fp32 by default, and
//     sharded by FSDP over all N devices (FULL_SHARD, as
//     reshard_after_forward is true): 4Ψ/N of parameters (the frozen base
//     too under LoRA), 4Ψ_t/N of fp32 gradients and 8Ψ_t/N of Adam
//     moments while it updates. update_actor loads offloaded states back
//     first, so offload lowers every phase but the update; param_offload
//     moves FSDP1's flat parameters (offload_fsdp_model_to_cpu), not the
//     gradients, which stay until the next zero_grad. Computing, FSDP
//     gathers the bf16 root unit, two decoder layers and one layer's fp32
//     gradient (see RLPlan).
//   - activations: one ppo_micro_batch_size_per_gpu micro batch of
//     prompt + response tokens, with gradient checkpointing (verl's
//     default, enable_gradient_checkpointing), by Korthikanti et al. 2022
//     as Plan computes them, with fp32 logits for the actor.
//   - reference (when a KL is used, KLCoefficient > 0): verl forces FSDP's
//     CPUOffload on it, so its fp32 parameters live in CPU memory and only
//     the unit computing comes to the device; with LoRA the actor without
//     its adapter is the reference (ray_trainer.py ref_in_actor). Its
//     forward-only passes, and the actor's old log-probs, hold less than
//     an update and are not a phase here.
//   - critic (PPO): AutoModelForTokenClassification with one label
//     (verl/utils/model.py load_valuehead_model), fp32 like the actor,
//     resident (less offloads) while the actor updates, and vice versa.
//   - rollout: vLLM claims gpu_memory_utilization of the device's total
//     memory for weights, activations and KV cache ("for vLLM v0.7.0 and
//     later: the fraction of total GPU memory to be used for the vLLM
//     instance", docs/examples/config.rst), sized by serve.Plan with the
//     rollout's tensor parallelism, a context of prompt + response and
//     verl's batch limits (8192 tokens, 1024 sequences). In trainer mode
//     the engine sleeps and frees its share (free_cache_engine); while it
//     generates, the actor's and critic's resident states stay beside it.
//     SGLang's mem_fraction_static is a fraction of the memory free when
//     it starts (the same page), which the resident states lower, so
//     sizing it as vLLM's share overstates it.
//   - reward model: served by verl's reward loop in the same share
//     (RewardModel), awake only while it scores; sized by serve.Plan as
//     its decoder with a language-model head, which overstates the
//     one-wide score head of a sequence classifier a little.
//   - Overhead.
//
// Time: the training passes of a step over the trained tokens D — the
// actor's update (6Ψ, 4Ψ with LoRA, +2Ψ recomputed), its old log-probs
// (2Ψ), the reference's (2Ψ, when a KL is used) and, for PPO, the
// critic's values (2Ψ_c) and update (6Ψ_c + 2Ψ_c) — over N × the bf16
// peak × MFU (DefaultMFU and its sources), divided by (1 − RolloutShare):
// generation's share of a step is an assumption (DefaultRolloutShare),
// since it grows with the response length and shrinks with the engine's
// batch. Cost is device-hours × the caller's price.
//
// Layouts are tried smallest first (1, 2, 4 … devices of a node, then
// whole nodes); a count whose nodes the rollout's tensor parallelism does
// not divide, or on which verl's batch checks fail, is skipped. When
// nothing fits on MaxNodes nodes PlanRL returns a *FitError.
func PlanRL(r *RL, acc hardware.Profile, opts ...PlanOption) (RLPlan, error) {
	o := newPlanOptions(opts)
	if r == nil || r.job == nil {
		o.problems = append(o.problems, errors.New("rl: is nil or zero: create it with llm.GRPO or llm.VerlPPO"))
		return RLPlan{}, errors.Join(o.problems...)
	}
	p := rlPlanner{r: r, acc: acc, o: o}
	var err error
	if p.m, err = factsOf("actor_rollout_ref.model.path", r.model, r.facts, "Facts"); err != nil {
		o.problems = append(o.problems, err)
	}
	if r.algorithm == PPOAlgorithm {
		given := r.criticFacts
		if given == nil && r.critic == r.model {
			given = r.facts
		}
		if p.critic, err = factsOf("critic.model.path", r.critic, given, "CriticFacts"); err != nil {
			o.problems = append(o.problems, err)
		}
	}
	if r.rewardModel != "" {
		// Facts missing or wrong are the run's own problem, reported by
		// its checks below (rewardModelProblem).
		p.reward, _ = factsOf("reward_model.model.path", r.rewardModel, r.rewardFacts, "RewardModelFacts")
	}
	if err := deviceProblem(acc); err != nil {
		o.problems = append(o.problems, err)
	} else if r.rolloutTP > acc.MaxPerNode {
		o.problems = append(o.problems, fmt.Errorf("actor_rollout_ref.rollout.tensor_model_parallel_size: %d exceeds the %d devices of a %s node", r.rolloutTP, acc.MaxPerNode, acc.Name))
	}
	if acc.Accelerated() && o.tokens > 0 && acc.BF16TFLOPS <= 0 {
		o.problems = append(o.problems, fmt.Errorf("accelerator: %s has no bf16 peak in the catalogue, and verl trains in bf16", acc.Name))
	}
	// The run's own checks, less the layout's (the planner chooses it).
	_, _, errs := r.overrides(0, 0, acc.Vendor == hardware.Huawei)
	errs = append(slices.Clone(r.problems), errs...).Filter(func(err error) bool {
		var fe *field.Error
		return errors.As(err, &fe) && (fe.Field == "trainer.nnodes" || fe.Field == "trainer.n_gpus_per_node")
	})
	if len(errs) > 0 {
		o.problems = append(o.problems, fmt.Errorf("rl: %w", errs.ToAggregate()))
	}
	if len(o.problems) > 0 {
		return RLPlan{}, errors.Join(o.problems...)
	}
	p.o = o

	if p.rollout, err = p.engine(p.m, "actor_rollout_ref.rollout"); err != nil {
		return RLPlan{}, err
	}
	if r.rewardModel != "" {
		// serve.Plan sizes generating models; a sequence classifier is the
		// same decoder with a one-wide head.
		scorer := p.reward
		scorer.Task = models.TaskTextGeneration
		if p.rewardEngine, err = p.engine(scorer, "reward_model.rollout"); err != nil {
			return RLPlan{}, err
		}
	}

	var smallest RLPlan
	tried := false
	for _, n := range deviceCounts(acc.MaxPerNode, o.maxNodes) {
		perNode := min(n, acc.MaxPerNode)
		if perNode%r.rolloutTP != 0 || verlBatchProblem(r.batch, r.miniBatch, r.microBatch, r.samples, n) != "" {
			continue
		}
		for _, z := range p.offloads() {
			plan := p.size(n, z)
			if !tried || plan.NeedBytesPerDevice < smallest.NeedBytesPerDevice {
				smallest, tried = plan, true
			}
			if plan.NeedBytesPerDevice <= plan.DeviceBytes {
				p.estimate(&plan)
				return plan, nil
			}
		}
	}
	if !tried {
		return RLPlan{}, fmt.Errorf("data.train_batch_size: no device count of up to %d %s nodes passes verl's batch checks for %d prompts × %d samples, mini batch %d, micro batch %d with rollout tensor parallelism %d",
			o.maxNodes, acc.Name, r.batch, r.samples, r.miniBatch, r.microBatch, r.rolloutTP)
	}
	return RLPlan{}, &FitError{Model: p.m.Name, Accelerator: acc.Name, Accelerators: smallest.Accelerators,
		NeedBytes: smallest.NeedBytesPerDevice, DeviceBytes: smallest.DeviceBytes}
}

type rlPlanner struct {
	r                     *RL
	m, critic, reward     models.Model
	acc                   hardware.Profile
	o                     planOptions
	rollout, rewardEngine serve.PlanResult
}

// engine sizes a vLLM (or SGLang) server of model m in the rollout's
// share with serve.Plan; key names the configuration it renders to.
func (p rlPlanner) engine(m models.Model, key string) (serve.PlanResult, error) {
	r := p.r
	res, err := serve.Plan(m, p.acc,
		serve.TensorParallel(r.rolloutTP), serve.MemoryUtilization(r.rolloutMemory),
		serve.ContextLength(r.promptLen+r.responseLen),
		serve.MaxBatchedTokens(verlMaxBatchedTokens), serve.MaxSequences(verlMaxSequences),
		// What lies outside the share is the planner's to count.
		serve.Overhead(0))
	if err != nil {
		return serve.PlanResult{}, fmt.Errorf("%s.gpu_memory_utilization: %v of %s does not hold %s at tensor parallelism %d and %d tokens: raise Rollout's memory share or tensor parallelism: %w",
			key, r.rolloutMemory, p.acc.Name, m.Name, r.rolloutTP, r.promptLen+r.responseLen, err)
	}
	if res.PipelineParallel > 1 {
		return serve.PlanResult{}, fmt.Errorf("%s.gpu_memory_utilization: %v of %s holds %s only in %d pipeline stages, which verl's rollout does not use: raise Rollout's memory share or tensor parallelism",
			key, r.rolloutMemory, p.acc.Name, m.Name, res.PipelineParallel)
	}
	return res, nil
}

type fsdpOffload struct{ params, optimizer bool }

// offloads are tried in order, starting from the run's own setting:
// none, the optimizer, then the parameters too (AllowOffload).
func (p rlPlanner) offloads() []fsdpOffload {
	own := fsdpOffload{params: p.r.offloadParams, optimizer: p.r.offloadOptimizer}
	out := []fsdpOffload{own}
	if p.o.offload {
		for _, z := range []fsdpOffload{{optimizer: true}, {params: true, optimizer: true}} {
			if (z.params || !own.params) && (z.optimizer || !own.optimizer) && z != own {
				out = append(out, z)
			}
		}
	}
	return out
}

// trainable is the actor's trained parameter count: the LoRA adapter on
// every linear layer (target_modules all-linear) or the whole model.
func (p rlPlanner) trainable() int64 {
	if p.r.loraRank > 0 {
		n, _ := LoRAParameters(p.m, p.r.loraRank)
		return n
	}
	return p.m.Parameters
}

// criticModel is m as verl's critic loads it: without its output head,
// with the score head of one label (h + 1 parameters) instead, so its
// only vocabulary-sized matrix is the embedding.
func criticModel(m models.Model) models.Model {
	delta := int64(m.HiddenSize) + 1
	if !m.TiedEmbeddings {
		delta -= int64(m.VocabSize) * int64(m.HiddenSize)
	}
	m.Parameters += delta
	if m.ActiveParameters > 0 {
		m.ActiveParameters += delta
	}
	m.TiedEmbeddings = true
	return m
}

// fsdpStates returns one device's fp32 FSDP states of a model of total
// parameters of which trainable train, on n devices: in its update, and
// resident outside it given the offloads; and what offload puts in CPU
// memory.
func fsdpStates(total, trainable int64, n int, z fsdpOffload) (update, resident, offloaded int64) {
	N := int64(n)
	params, grads, adam := ceilDiv(4*total, N), ceilDiv(4*trainable, N), ceilDiv(8*trainable, N)
	update = params + grads + adam
	resident = update
	if z.params {
		resident -= params
		offloaded += params
	}
	if z.optimizer {
		resident -= adam
		offloaded += adam
	}
	return update, resident, offloaded
}

// gathered is what FSDP brings to one device to compute a model m whose
// trainable parameters train: its bf16 root unit and two decoder layers,
// and one layer's fp32 gradient.
func gathered(m models.Model, total, trainable int64) int64 {
	outer := outerParameters(m)
	layers := int64(max(m.Layers, 1))
	layer := (total - outer) / layers
	gradient := min(layer, trainable/layers)
	return 2*(outer+2*layer) + 4*gradient
}

func (p rlPlanner) size(n int, z fsdpOffload) RLPlan {
	r := p.r
	perNode := min(n, p.acc.MaxPerNode)
	nodes := n / perNode
	s := int64(r.promptLen + r.responseLen)
	b := int64(r.microBatch)
	psi, psiT := p.m.Parameters, p.trainable()
	plan := RLPlan{
		Model: p.m.Name, Accelerator: p.acc.Name, Algorithm: r.algorithm,
		Accelerators: n, Nodes: nodes, AcceleratorsPerNode: perNode,
		OffloadParams: z.params, OffloadOptimizer: z.optimizer,
		Parameters: psi, TrainableParameters: psiT,
		Rollout: p.rollout, RolloutReplicas: n / r.rolloutTP,
		OverheadBytesPerDevice: p.o.overhead, DeviceBytes: p.rollout.DeviceMemoryBytes,
		PromptsPerStep: r.batch, Samples: r.samples, SequenceLength: int(s), MicroBatch: r.microBatch, UsesReference: r.klCoef > 0,
	}
	plan.SequencesPerReplica = int(ceilDiv(int64(r.batch)*int64(r.samples), int64(plan.RolloutReplicas)))
	var cpuPerDevice int64
	var offloaded int64
	plan.ActorStateBytesPerDevice, plan.ActorResidentBytesPerDevice, offloaded = fsdpStates(psi, psiT, n, z)
	cpuPerDevice += offloaded
	plan.ActorGatheredBytesPerDevice = gathered(p.m, psi, psiT)
	plan.ActorActivationBytesPerDevice = activationBytes(p.m, s, b, r.checkpointing, p.o.attentionMaps, true)
	if plan.UsesReference && r.loraRank == 0 {
		cpuPerDevice += ceilDiv(4*psi, int64(n)) // the reference, CPU-offloaded by FSDP
	}
	if r.algorithm == PPOAlgorithm {
		critic := criticModel(p.critic)
		psiC := critic.Parameters
		plan.CriticParameters = psiC
		plan.CriticStateBytesPerDevice, plan.CriticResidentBytesPerDevice, offloaded = fsdpStates(psiC, psiC, n, z)
		cpuPerDevice += offloaded
		plan.CriticGatheredBytesPerDevice = gathered(critic, psiC, psiC)
		plan.CriticActivationBytesPerDevice = activationBytes(p.critic, s, b, r.checkpointing, p.o.attentionMaps, false)
		plan.CriticUpdateBytes = plan.CriticStateBytesPerDevice + plan.CriticGatheredBytesPerDevice + plan.CriticActivationBytesPerDevice +
			plan.ActorResidentBytesPerDevice + p.o.overhead
	}
	resident := plan.ActorResidentBytesPerDevice + plan.CriticResidentBytesPerDevice
	plan.ActorUpdateBytes = plan.ActorStateBytesPerDevice + plan.ActorGatheredBytesPerDevice + plan.ActorActivationBytesPerDevice +
		plan.CriticResidentBytesPerDevice + p.o.overhead
	plan.RolloutBytes = resident + p.rollout.UsableBytesPerDevice + p.o.overhead
	if r.rewardModel != "" {
		plan.HasRewardModel, plan.Reward, plan.RewardParameters = true, p.rewardEngine, p.reward.Parameters
		plan.RewardBytes = resident + p.rewardEngine.UsableBytesPerDevice + p.o.overhead
	}
	plan.NeedBytesPerDevice = max(plan.ActorUpdateBytes, plan.CriticUpdateBytes, plan.RolloutBytes, plan.RewardBytes)
	plan.CPUBytesPerNode = cpuPerDevice * int64(perNode)
	return plan
}

// estimate fills in time and cost.
func (p rlPlanner) estimate(plan *RLPlan) {
	r := p.r
	plan.MFU, plan.PeakTFLOPS, plan.RolloutShare = p.o.mfu, p.acc.BF16TFLOPS, p.o.rolloutShare
	if price, ok := p.o.prices[p.acc.Name]; ok {
		plan.PricePerDeviceHour, plan.HasPrice = price, true
	}
	recompute := 0
	if r.checkpointing {
		recompute = 2
	}
	active := func(m models.Model) int64 {
		if m.ActiveParameters > 0 {
			return m.ActiveParameters
		}
		return m.Parameters
	}
	update := 6
	if r.loraRank > 0 {
		update = 4
	}
	plan.Compute = []ComputeTerm{
		{Pass: "actor update", Multiple: update + recompute, Parameters: active(p.m)},
		{Pass: "old log-probs", Multiple: 2, Parameters: active(p.m)},
	}
	if plan.UsesReference {
		plan.Compute = append(plan.Compute, ComputeTerm{Pass: "reference log-probs", Multiple: 2, Parameters: active(p.m)})
	}
	if r.algorithm == PPOAlgorithm {
		critic := active(criticModel(p.critic))
		plan.Compute = append(plan.Compute,
			ComputeTerm{Pass: "critic values", Multiple: 2, Parameters: critic},
			ComputeTerm{Pass: "critic update", Multiple: 6 + recompute, Parameters: critic})
	}
	if p.o.tokens == 0 || plan.PeakTFLOPS <= 0 {
		return
	}
	plan.TrainingTokens = p.o.tokens * int64(r.epochs)
	for _, c := range plan.Compute {
		plan.FLOPs += float64(c.Multiple) * float64(c.Parameters) * float64(plan.TrainingTokens)
	}
	seconds := plan.FLOPs / (float64(plan.Accelerators) * plan.PeakTFLOPS * 1e12 * plan.MFU)
	plan.TrainingHours = seconds / 3600
	plan.Hours = plan.TrainingHours / (1 - plan.RolloutShare)
	plan.DeviceHours = plan.Hours * float64(plan.Accelerators)
	plan.Cost = plan.DeviceHours * plan.PricePerDeviceHour
}

// String explains every figure of the plan, one a line.
func (p RLPlan) String() string {
	var b strings.Builder
	name := "GRPO"
	if p.Algorithm == PPOAlgorithm {
		name = "PPO"
	}
	fmt.Fprintf(&b, "verl %s of %s on %d × %s (%d node(s) × %d), one colocated worker group (hybrid engine)", name, p.Model, p.Accelerators, p.Accelerator, p.Nodes, p.AcceleratorsPerNode)
	switch {
	case p.OffloadParams && p.OffloadOptimizer:
		b.WriteString(", parameters and optimizer offloaded to CPU")
	case p.OffloadOptimizer:
		b.WriteString(", optimizer offloaded to CPU")
	case p.OffloadParams:
		b.WriteString(", parameters offloaded to CPU")
	}
	fmt.Fprintf(&b, "\n  step: %d prompts × %d samples, up to %d tokens each, micro batch %d\n", p.PromptsPerStep, p.Samples, p.SequenceLength, p.MicroBatch)
	fmt.Fprintf(&b, "  parameters: actor %d (%d trainable)", p.Parameters, p.TrainableParameters)
	if p.CriticParameters > 0 {
		fmt.Fprintf(&b, ", critic %d", p.CriticParameters)
	}
	if p.HasRewardModel {
		fmt.Fprintf(&b, ", reward model %d", p.RewardParameters)
	}
	fmt.Fprintf(&b, "\n  per device: %s of %s at the largest phase\n", gib(p.NeedBytesPerDevice), gib(p.DeviceBytes))
	fmt.Fprintf(&b, "    actor update     %s = states %s (fp32 weights, gradients, Adam; FSDP over %d) + gathered %s + activations %s", gib(p.ActorUpdateBytes),
		gib(p.ActorStateBytesPerDevice), p.Accelerators, gib(p.ActorGatheredBytesPerDevice), gib(p.ActorActivationBytesPerDevice))
	if p.CriticParameters > 0 {
		fmt.Fprintf(&b, " + critic resident %s", gib(p.CriticResidentBytesPerDevice))
	}
	fmt.Fprintf(&b, " + overhead %s\n", gib(p.OverheadBytesPerDevice))
	if p.CriticParameters > 0 {
		fmt.Fprintf(&b, "    critic update    %s = states %s + gathered %s + activations %s + actor resident %s + overhead %s\n", gib(p.CriticUpdateBytes),
			gib(p.CriticStateBytesPerDevice), gib(p.CriticGatheredBytesPerDevice), gib(p.CriticActivationBytesPerDevice), gib(p.ActorResidentBytesPerDevice), gib(p.OverheadBytesPerDevice))
	}
	fmt.Fprintf(&b, "    generation       %s = resident %s + rollout share %s (%g of the device) + overhead %s\n", gib(p.RolloutBytes),
		gib(p.ActorResidentBytesPerDevice+p.CriticResidentBytesPerDevice), gib(p.Rollout.UsableBytesPerDevice), p.Rollout.MemoryUtilization, gib(p.OverheadBytesPerDevice))
	if p.HasRewardModel {
		fmt.Fprintf(&b, "    scoring          %s = resident %s + reward model share %s + overhead %s\n", gib(p.RewardBytes),
			gib(p.ActorResidentBytesPerDevice+p.CriticResidentBytesPerDevice), gib(p.Reward.UsableBytesPerDevice), gib(p.OverheadBytesPerDevice))
	}
	switch {
	case !p.UsesReference:
		b.WriteString("    reference        none (no KL term: use_kl_loss and use_kl_in_reward are off)\n")
	case p.TrainableParameters < p.Parameters:
		b.WriteString("    reference        the actor without its adapter (ref_in_actor)\n")
	default:
		b.WriteString("    reference        in CPU memory (FSDP CPU offload), gathered a unit at a time\n")
	}
	fmt.Fprintf(&b, "  rollout: %d replica(s) of TP=%d; each share holds %s weights + %s reserve + %s KV cache; %d of its %d responses at once at full length\n",
		p.RolloutReplicas, p.Rollout.TensorParallel, gib(p.Rollout.WeightBytesPerDevice), gib(p.Rollout.ReserveBytesPerDevice), gib(p.Rollout.KVCacheBytesPerDevice),
		min(p.Rollout.MaxConcurrentSequences, int64(p.SequencesPerReplica)), p.SequencesPerReplica)
	if p.CPUBytesPerNode > 0 {
		fmt.Fprintf(&b, "  CPU memory per node: %s (reference and offloaded states)\n", gib(p.CPUBytesPerNode))
	}
	if p.FLOPs == 0 {
		b.WriteString("  time: not estimated (give Tokens)\n")
		return b.String()
	}
	terms := make([]string, 0, len(p.Compute))
	for _, c := range p.Compute {
		terms = append(terms, fmt.Sprintf("%s %d×%d", c.Pass, c.Multiple, c.Parameters))
	}
	fmt.Fprintf(&b, "  compute: (%s) × %d tokens = %.3g FLOPs\n", strings.Join(terms, " + "), p.TrainingTokens, p.FLOPs)
	fmt.Fprintf(&b, "  time: FLOPs / (%d × %.1f TFLOPS × MFU %.2f) = %.2f h training / (1 − rollout share %.2f, assumed) = %.2f h, %.1f device-hours\n",
		p.Accelerators, p.PeakTFLOPS, p.MFU, p.TrainingHours, p.RolloutShare, p.Hours, p.DeviceHours)
	if p.HasPrice {
		fmt.Fprintf(&b, "  cost: %.1f device-hours × %.2f = %.2f\n", p.DeviceHours, p.PricePerDeviceHour, p.Cost)
	} else {
		fmt.Fprintf(&b, "  cost: no price for %s\n", p.Accelerator)
	}
	return b.String()
}
