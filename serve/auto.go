package serve

import (
	"errors"
	"fmt"
	"path"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/vgpuspec"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/vgpu"
)

// modelFacts returns the architecture of the served model: the one given
// to ModelFacts, or the catalogue's entry for a hub id; nil when neither is
// known.
func (s *Service) modelFacts(src Source) *models.Model {
	if s.facts != nil {
		m := *s.facts
		return &m
	}
	if src.Kind == SourceHuggingFace || src.Kind == SourceModelScope {
		if m, err := models.Lookup(src.Repo); err == nil {
			return &m
		}
	}
	return nil
}

// layout works out the tensor and pipeline parallel sizes, the devices per
// pod and the nodes of a replica: with the planner under Auto, otherwise
// from Accelerators, Nodes, TensorParallel and PipelineParallel, checked against
// the model's facts when they are known.
func (s *Service) layout(r *rendering, sourceOK bool) field.ErrorList {
	r.maxModelLen = s.maxModelLen
	if r.maxModelLen == 0 {
		r.maxModelLen = s.engine.defaultMaxLen
	}
	r.memoryUtilization = s.memoryUtilization
	var errs field.ErrorList
	if m := r.facts; m != nil && m.ContextLength > 0 && s.maxModelLen > m.ContextLength {
		// vLLM and SGLang refuse a length above the model's
		// max_position_embeddings unless told to overwrite it, and rope
		// scaling beyond it degrades the output.
		errs = append(errs, field.Invalid(field.NewPath("spec", "maxModelLen"), s.maxModelLen,
			fmt.Sprintf("exceeds %s's context of %d tokens", m.Name, m.ContextLength)))
	}
	errs = append(errs, s.checkWeightFormat(r)...)
	errs = append(errs, s.checkTask(r)...)
	if s.auto != nil {
		return append(errs, s.autoLayout(r, sourceOK)...)
	}
	errs = append(errs, s.explicitLayout(r)...)
	if len(errs) == 0 {
		errs = append(errs, s.checkFit(r)...)
	}
	return append(errs, s.checkPlacement(r)...)
}

// checkWeightFormat reports weights the engine cannot load on the
// hardware: vLLM-Ascend has no FP8 kernels, and serves 8-bit checkpoints
// quantized to W8A8 by msModelSlim with --quantization ascend (its
// quantization method, vllm_ascend/quantization).
func (s *Service) checkWeightFormat(r *rendering) field.ErrorList {
	m := r.facts
	if m == nil || s.engine != vllmEngine || !r.hasProfile || r.profile.Vendor != hardware.Huawei {
		return nil
	}
	if m.DType == models.FP8 && !strings.EqualFold(s.quantization, "ascend") {
		return field.ErrorList{field.Invalid(field.NewPath("spec", "model"), s.model, fmt.Sprintf(
			"%s is published in FP8, which vLLM-Ascend cannot load: serve a W8A8 checkpoint of it (such as ModelScope's vllm-ascend/%s-W8A8) with Quantization(\"ascend\") and ModelFacts",
			m.Name, path.Base(m.Name)))}
	}
	return nil
}

// checkTask reports a model the engine does not serve: TEI serves
// embedding, reranking and classification models, vLLM, SGLang, TGI and
// MindIE (as cube renders them) serve models that generate text,
// vision-language ones included. Triton serves whatever its model
// repository holds, and Ollama embeds as well as it generates (/api/embed).
func (s *Service) checkTask(r *rendering) field.ErrorList {
	m := r.facts
	if m == nil || s.engine == tritonEngine || s.engine == ollamaEngine {
		return nil
	}
	p := field.NewPath("spec", "model")
	task := m.Task
	if task == "" {
		task = models.TaskTextGeneration
	}
	switch {
	case s.engine == teiEngine && m.Generates():
		return field.ErrorList{field.Invalid(p, s.model, fmt.Sprintf(
			"%s is a %s model and TEI serves embedding, reranking and classification models: serve it with serve.VLLM", m.Name, task))}
	case s.engine != teiEngine && !m.Generates():
		return field.ErrorList{field.Invalid(p, s.model, fmt.Sprintf(
			"%s is a%s %s model, which %s does not serve: serve it with serve.TEI", m.Name, article(string(task)), task, s.engine.title))}
	}
	return nil
}

// explicitLayout derives what was not given from what was: TP × PP equals
// the devices of a replica, Accelerators per pod × nodes. On an accelerator profile
// a pod gets at least one device.
func (s *Service) explicitLayout(r *rendering) field.ErrorList {
	e := s.engine
	spec := field.NewPath("spec")
	nodes, devices := max(1, s.nodes), podspec.Of(&s.Handle).GPUCount()
	accelerated := r.hasProfile && r.profile.Accelerated()
	r.nodes, r.devices, r.tp, r.pp = nodes, devices, 1, 1
	if slice := podspec.Of(&s.Handle).SliceSetting(); slice != nil {
		return s.sliceLayout(r, slice)
	}
	if e.flags.tensorParallel == "" {
		// Ollama and Triton use the devices they are given as they see fit.
		if devices == 0 && accelerated {
			r.devices = 1
		}
		return nil
	}
	if devices == 0 && nodes > 1 {
		return field.ErrorList{field.Required(spec.Child("accelerators"), "a replica across nodes needs accelerators on each node: call On and Accelerators")}
	}
	// Settings the engine lacks are reported by checkSupport; ignore them.
	tp, pp := s.tp, s.pp
	if e.flags.pipelineParallel == "" {
		pp = 0
	}
	total := devices * nodes
	switch {
	case tp == 0 && pp == 0 && !e.pipeline:
		tp, pp = max(total, 1), 1
	case tp == 0 && pp == 0:
		tp, pp = max(devices, 1), nodes
	case tp == 0:
		tp = 1
		if devices > 0 {
			if total%pp != 0 {
				return field.ErrorList{field.Invalid(spec.Child("pipelineParallel"), pp,
					fmt.Sprintf("must divide the %d devices of a replica (%d per pod × %d nodes)", total, devices, nodes))}
			}
			tp = total / pp
		}
	case pp == 0:
		pp = 1
		// Only an engine with pipeline stages can use the devices TP
		// leaves over; elsewhere they would sit idle, reported below.
		if e.pipeline && devices > 0 && total%tp == 0 {
			pp = total / tp
		}
	}
	if devices == 0 && (tp*pp > 1 || accelerated) {
		devices = tp * pp // one node: multi-node needs Accelerators, checked above
	}
	r.tp, r.pp, r.devices = tp, pp, devices
	if devices > 0 && tp*pp != devices*nodes {
		return field.ErrorList{field.Invalid(spec.Child("tensorParallel"), tp,
			fmt.Sprintf("tensorParallel × pipelineParallel = %d × %d must equal the devices of a replica, %d (%d per pod × %d nodes)",
				tp, pp, devices*nodes, devices, nodes))}
	}
	return nil
}

// sliceLayout lays a replica out on the pod's slice: one pod on one node,
// the slice's devices split by TP × PP. A MIG instance or an Ascend vNPU is
// one device to its process (CUDA enumerates a single MIG instance per
// process; a vNPU is one per container), so neither takes TP or PP above 1.
func (s *Service) sliceLayout(r *rendering, slice *vgpu.Spec) field.ErrorList {
	e := s.engine
	spec := field.NewPath("spec")
	r.slice = true
	reads := vgpuspec.Of(slice)
	n, kind := max(1, reads.Count()), vgpu.Kind(reads.Kind())
	r.devices = n
	var errs field.ErrorList
	if s.nodes > 1 {
		errs = append(errs, field.Invalid(spec.Child("nodes"), s.nodes, "a replica on a Slice runs in one pod: spread whole devices over nodes with Accelerators and Nodes"))
	}
	if e.flags.tensorParallel == "" {
		return errs // Ollama and Triton use what the slice gives them
	}
	oneDevice := kind == vgpu.KindMIG || kind == vgpu.KindVNPU
	tp, pp := s.tp, s.pp
	if e.flags.pipelineParallel == "" {
		pp = 0
	}
	switch {
	case tp == 0 && pp == 0 && oneDevice:
		tp, pp = 1, 1
	case tp == 0 && pp == 0:
		tp, pp = n, 1
	case tp == 0 && n%pp == 0:
		tp = n / pp
	case tp == 0:
		tp = 1
	case pp == 0:
		pp = 1
	}
	r.tp, r.pp = tp, pp
	switch {
	case oneDevice && tp*pp > 1:
		errs = append(errs, field.Invalid(spec.Child("tensorParallel"), tp,
			fmt.Sprintf("tensorParallel × pipelineParallel = %d × %d on a %s slice, which is one device to the engine: serve it with TP 1, or use whole devices (Accelerators)", tp, pp, kind)))
	case oneDevice && n > 1:
		errs = append(errs, field.Invalid(spec.Child("slice", "accelerators"), n,
			fmt.Sprintf("%d %s instances in one pod, but the engine's process sees one: %d would sit idle", n, kind, n-1)))
	case tp*pp != n:
		errs = append(errs, field.Invalid(spec.Child("tensorParallel"), tp,
			fmt.Sprintf("tensorParallel × pipelineParallel = %d × %d must equal the slice's %d device(s) (vgpu Spec.Accelerators)", tp, pp, n)))
	}
	return errs
}

// checkPlacement reports layouts the hardware or the engine cannot hold.
func (s *Service) checkPlacement(r *rendering) field.ErrorList {
	e := s.engine
	spec := field.NewPath("spec")
	r.templateDevices = r.devices
	if r.slice {
		r.templateDevices = 0 // the slice requests its own devices
	}
	var errs field.ErrorList
	if r.nodes > 1 && !e.multiNode {
		errs = append(errs, field.Invalid(spec.Child("nodes"), r.nodes, e.title+" serves a replica from one node; use vLLM, SGLang or MindIE across nodes"))
	}
	if r.nodes > 1 && r.devices == 0 {
		errs = append(errs, field.Required(spec.Child("accelerators"), "a replica across nodes needs accelerators on each node: call On and Accelerators"))
	}
	if r.hasProfile && r.profile.MaxPerNode > 0 && r.devices > r.profile.MaxPerNode {
		errs = append(errs, field.Invalid(spec.Child("accelerators"), r.devices,
			fmt.Sprintf("%d devices per pod (tensor parallel %d × pipeline parallel %d) but a %s node holds %d: spread the replica over nodes with Nodes, or size it with Auto",
				r.devices, r.tp, r.pp, r.profile.Name, r.profile.MaxPerNode)))
		r.templateDevices = 0 // reported here; keep hardware.Apply from repeating it
	}
	return errs
}

// checkFit checks explicit settings against the model's facts when they are
// known: the tensor-parallel size must split the attention heads, and the
// weights plus one sequence of the context length must fit the devices.
func (s *Service) checkFit(r *rendering) field.ErrorList {
	e := s.engine
	// A slice holds a fraction of the memory the planner would count.
	// A model of the wrong task was reported by checkTask.
	if r.facts == nil || !r.facts.Generates() || !e.autoSizes || !r.hasProfile || !r.profile.Accelerated() || r.devices == 0 || r.slice {
		return nil
	}
	spec := field.NewPath("spec")
	m := *r.facts
	if problem := (planner{model: m}).splitProblem(r.tp); problem != "" {
		return field.ErrorList{field.Invalid(spec.Child("tensorParallel"), r.tp, problem)}
	}
	if r.tp > r.profile.MaxPerNode {
		return nil // a MindIE world spanning nodes; the planner splits by node
	}
	opts := append(s.planOptions(r), TensorParallel(r.tp), MaxNodes(max(r.nodes, DefaultMaxNodes)))
	plan, err := Plan(m, r.profile, opts...)
	var fit *FitError
	switch {
	case errors.As(err, &fit):
		return field.ErrorList{field.Invalid(spec.Child("model"), s.model,
			fmt.Sprintf("does not fit at tensor parallel %d on %s even across %d nodes: %v; lower MaxModelLen or quantize", r.tp, r.profile.Name, fit.Nodes, fit))}
	case err != nil:
		return field.ErrorList{field.Invalid(spec.Child("model"), s.model, err.Error())}
	case plan.PipelineParallel > r.pp:
		return field.ErrorList{field.Invalid(spec.Child("accelerators"), r.devices*r.nodes,
			fmt.Sprintf("%s does not fit %d %s device(s) with one %d-token sequence: at tensor parallel %d it needs %d pipeline stages (%d devices); add Accelerators or Nodes, lower MaxModelLen, or use Auto",
				m.Name, r.tp*r.pp, r.profile.Name, plan.ContextLength, plan.TensorParallel, plan.PipelineParallel, plan.Accelerators()))}
	}
	return nil
}

// autoLayout sizes the service with the planner.
func (s *Service) autoLayout(r *rendering, sourceOK bool) field.ErrorList {
	e := s.engine
	spec := field.NewPath("spec")
	autoPath := spec.Child("auto")
	r.nodes, r.tp, r.pp = 1, 1, 1
	if !e.autoSizes {
		return field.ErrorList{field.Forbidden(autoPath, e.title+" is not sized by the planner: set Accelerators instead")}
	}
	var errs field.ErrorList
	if podspec.Of(&s.Handle).GPUCount() > 0 || s.nodes > 0 || s.pp > 0 {
		errs = append(errs, field.Forbidden(autoPath, "Auto chooses the accelerators, nodes and pipeline stages: drop Accelerators, Nodes and PipelineParallel, or drop Auto"))
	}
	if podspec.Of(&s.Handle).SliceSetting() != nil {
		errs = append(errs, field.Forbidden(autoPath, "Auto sizes whole devices: drop Slice, or drop Auto and size the slice yourself"))
	}
	if !r.hasProfile || !r.profile.Accelerated() {
		errs = append(errs, field.Required(spec.Child("on"), "Auto sizes the service for an accelerator: call On(hardware.H100) or another profile"))
	}
	if sourceOK && r.facts == nil {
		why := fmt.Sprintf("%s is not in the model catalogue (models.Lookup)", r.src.Repo)
		if r.src.Repo == "" {
			why = "a model on a volume has no catalogue entry"
		}
		errs = append(errs, field.Invalid(spec.Child("model"), s.model,
			"Auto needs the model's architecture and "+why+": give it with ModelFacts, or size the service yourself with Accelerators and TensorParallel instead of Auto"))
	}
	if len(errs) > 0 || !sourceOK || !r.facts.Generates() { // the last was reported by checkTask
		return errs
	}
	opts := append(s.planOptions(r), s.auto.opts...)
	plan, err := Plan(*r.facts, r.profile, opts...)
	if err != nil {
		var fit *FitError
		if errors.As(err, &fit) {
			return field.ErrorList{field.Invalid(autoPath, r.facts.Name,
				fmt.Sprintf("cannot be served on %s within %d nodes: %v", r.profile.Name, fit.Nodes, fit))}
		}
		return field.ErrorList{field.Invalid(autoPath, r.facts.Name, err.Error())}
	}
	r.plan = &plan
	r.tp, r.pp, r.nodes, r.devices = plan.TensorParallel, plan.PipelineParallel, plan.Nodes, plan.AcceleratorsPerNode
	r.maxModelLen = plan.ContextLength
	if e.plannedFraction {
		r.memoryUtilization = plan.MemoryUtilization
	}
	if r.pp > 1 && !e.pipeline {
		if !e.multiNode {
			return field.ErrorList{field.Invalid(autoPath, r.facts.Name,
				fmt.Sprintf("the plan splits %s into %d pipeline stages (%d devices) and %s has no pipeline parallelism: use vLLM or SGLang",
					r.facts.Name, r.pp, plan.Accelerators(), e.title))}
		}
		// MindIE spans nodes with one tensor-parallel world.
		r.tp, r.pp = r.tp*r.pp, 1
		if problem := (planner{model: *r.facts}).splitProblem(r.tp); problem != "" {
			return field.ErrorList{field.Invalid(autoPath, r.facts.Name,
				fmt.Sprintf("the plan needs %d NPUs and %s runs them as one tensor-parallel world, which %s", r.tp, e.title, problem))}
		}
	}
	return s.checkPlacement(r)
}

// planOptions passes the service's own settings to the planner.
func (s *Service) planOptions(r *rendering) []PlanOption {
	var opts []PlanOption
	if r.maxModelLen >= 2 {
		opts = append(opts, ContextLength(r.maxModelLen))
	}
	// Out-of-range settings are reported by their setters, not again here.
	if s.memoryUtilization > 0 && s.memoryUtilization <= 1 {
		opts = append(opts, MemoryUtilization(s.memoryUtilization))
	}
	if s.tp > 0 {
		opts = append(opts, TensorParallel(s.tp))
	}
	if d, ok := quantizedDType(s.quantization); ok {
		opts = append(opts, WeightDType(d))
	}
	if strings.HasPrefix(strings.ToLower(s.kvCacheDType), "fp8") {
		opts = append(opts, KVCacheDType(models.FP8))
	}
	return opts
}

// quantizedDType is the weight format of a quantization method whose width
// is unambiguous; other methods are planned at the published format.
func quantizedDType(method string) (models.DType, bool) {
	switch strings.ToLower(method) {
	case "fp8", "fbgemm_fp8", "ptpc_fp8":
		return models.FP8, true
	case "awq", "awq_marlin", "gptq", "gptq_marlin", "marlin", "bitsandbytes-nf4", "bitsandbytes-fp4":
		return models.INT4, true
	case "eetq", "int8", "w8a8", "w8a8_int8", "experts_int8", "ascend":
		return models.INT8, true
	}
	return "", false
}
