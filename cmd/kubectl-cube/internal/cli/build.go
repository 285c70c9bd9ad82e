package cli

import (
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/serve"
)

// profile finds the hardware profile --on names: a catalogue name, ignoring
// case (hardware.Lookup), or a prefix that names one profile alone ("H100"
// for H100-SXM-80GB). A prefix of several is refused with their names.
func profile(name string) (hardware.Profile, error) {
	if name == "" {
		return hardware.Profile{}, errors.New("--on: required: the hardware profile, e.g. H100 or L4")
	}
	if p, ok := hardware.Lookup(name); ok {
		return p, nil
	}
	var matches []hardware.Profile
	var all []string
	for _, p := range hardware.Catalogue() {
		all = append(all, p.Name)
		if strings.HasPrefix(strings.ToLower(p.Name), strings.ToLower(strings.TrimSpace(name))) {
			matches = append(matches, p)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		return hardware.Profile{}, fmt.Errorf("--on %q: no such hardware profile; one of %s", name, strings.Join(all, ", "))
	}
	names := make([]string, len(matches))
	for i, p := range matches {
		names[i] = p.Name
	}
	return hardware.Profile{}, fmt.Errorf("--on %q: names several profiles (%s); give one", name, strings.Join(names, ", "))
}

// modelID is the id a builder takes for MODEL: a catalogue name
// ("Qwen2.5-7B-Instruct") becomes the catalogue's Hugging Face id; an id or
// a URI (org/name, hf://, modelscope://, pvc://, s3://) is passed on as
// given, for the builder to judge.
func modelID(model string) string {
	if strings.Contains(model, "/") {
		return model
	}
	if m, err := models.Lookup(model); err == nil && m.HFID != "" {
		return m.HFID
	}
	return model
}

var notName = regexp.MustCompile(`[^a-z0-9]+`)

// nameFor derives a release name from a model id when --name is not given:
// the last path element, lowercased, with every run of other characters a
// dash ("Qwen/Qwen2.5-7B-Instruct" gives "qwen2-5-7b-instruct").
func nameFor(model, suffix string) string {
	base := path.Base(strings.TrimRight(model, "/"))
	if i := strings.Index(base, "://"); i >= 0 {
		base = base[i+3:]
	}
	name := strings.Trim(notName.ReplaceAllString(strings.ToLower(base), "-"), "-")
	if suffix != "" {
		name += "-" + suffix
	}
	return name
}

// serveFlags are what render serve and plan serve build a Service from.
type serveFlags struct {
	on, name, engine, namespace string
	replicas, contextLength     int
}

func (s *serveFlags) add(f *pflag.FlagSet) {
	f.StringVar(&s.on, "on", "", "the hardware profile: a catalogue name or a prefix of one (H100, L4, Ascend910B3…) (required)")
	f.StringVar(&s.name, "name", "", "the release name (default: from the model id, e.g. qwen2-5-7b-instruct)")
	f.StringVar(&s.engine, "engine", "vllm", "the engine: vllm, sglang, tgi or mindie")
	f.IntVar(&s.replicas, "replicas", 0, "replicas of the model (0: the builder's default, 1)")
	f.IntVar(&s.contextLength, "context-length", 0, "the context length to plan for, in tokens (0: the model's)")
}

var engines = map[string]func(name, model string) *serve.Service{
	"vllm": serve.VLLM, "sglang": serve.SGLang, "tgi": serve.TGI, "mindie": serve.MindIE,
}

// service builds the Service render prints and plan sizes: the engine's
// constructor, On the profile, Auto with the plan options given.
func (s *serveFlags) service(model string) (*serve.Service, error) {
	var errs []error
	acc, err := profile(s.on)
	if err != nil {
		errs = append(errs, err)
	}
	ctor, ok := engines[strings.ToLower(s.engine)]
	if !ok {
		errs = append(errs, fmt.Errorf("--engine %q: one of %s", s.engine, strings.Join(slices.Sorted(maps.Keys(engines)), ", ")))
	}
	if s.replicas < 0 {
		errs = append(errs, fmt.Errorf("--replicas %d: must not be negative", s.replicas))
	}
	if s.contextLength < 0 {
		errs = append(errs, fmt.Errorf("--context-length %d: must not be negative", s.contextLength))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	name := s.name
	if name == "" {
		name = nameFor(model, "")
	}
	var opts []serve.PlanOption
	if s.contextLength > 0 {
		opts = append(opts, serve.ContextLength(s.contextLength))
	}
	svc := ctor(name, modelID(model)).On(acc).Auto(opts...)
	if s.replicas > 0 {
		svc.Replicas(s.replicas)
	}
	if s.namespace != "" {
		svc.Namespace(s.namespace)
	}
	return svc, nil
}

// fineTuneFlags are what render finetune and plan finetune build a
// FineTune from.
type fineTuneFlags struct {
	on, name, method, format, output, namespace string
	datasetArgs                                 []string
	full                                        bool
	loraRank, qloraBits, cutoff                 int
	loraRankSet                                 bool
	accelerators, zero                          int
	tokens                                      int64
}

func (f *fineTuneFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.on, "on", "", "the hardware profile: a catalogue name or a prefix of one (H100, A100-SXM-80GB…) (required)")
	fs.StringVar(&f.name, "name", "", "the release name (default: from the model id and the method, e.g. qwen2-5-7b-instruct-sft)")
	fs.StringVar(&f.method, "method", "sft", "the training stage: sft, rm (reward model), dpo, orpo, simpo or kto")
	fs.StringArrayVar(&f.datasetArgs, "dataset", nil, "a dataset, [NAME=]URI (pvc://claim/file.json, hf://org/dataset, s3://…); repeat for several (required)")
	fs.StringVar(&f.format, "format", string(datasets.Alpaca), "the datasets' record layout: alpaca or sharegpt")
	fs.StringVar(&f.output, "output", "", "where the result is written, pvc://claim/path or s3://bucket/prefix")
	fs.BoolVar(&f.full, "full", false, "train every weight instead of a LoRA adapter")
	fs.IntVar(&f.loraRank, "lora-rank", 8, "the rank of the LoRA or QLoRA adapter")
	fs.IntVar(&f.qloraBits, "qlora-bits", 0, "train a QLoRA adapter on a base quantized to 4 or 8 bits")
	fs.IntVar(&f.cutoff, "cutoff-length", 0, "tokens a sample is cut to (0: the fine-tune's default, 2048)")
	fs.IntVar(&f.accelerators, "accelerators", 0, "pin the accelerators in all instead of letting the planner choose (with --zero)")
	fs.IntVar(&f.zero, "zero", -1, "pin the DeepSpeed ZeRO stage, 0 to 3 (with --accelerators)")
	fs.Int64Var(&f.tokens, "tokens", 0, "training tokens of one epoch, for the time estimate (0: memory only)")
}

var stages = map[string]func(name, model string) *llm.FineTune{
	"sft": llm.SFT, "rm": llm.RewardModel, "dpo": llm.DPO, "orpo": llm.ORPO, "simpo": llm.SimPO, "kto": llm.KTO,
}

// dataset reads one --dataset, [NAME=]URI, as the stage's kind of data.
func dataset(method, arg string, format datasets.Format, index int) (datasets.Dataset, error) {
	name, uri, ok := strings.Cut(arg, "=")
	if !ok || strings.ContainsAny(name, ":/") {
		name, uri = "", arg
	}
	if uri == "" {
		return datasets.Dataset{}, fmt.Errorf("--dataset %q: no URI", arg)
	}
	if name == "" {
		name = nameFor(strings.TrimSuffix(uri, path.Ext(uri)), "")
		if name == "" {
			name = fmt.Sprintf("dataset-%d", index)
		}
	}
	switch method {
	case "sft":
		return datasets.InstructionData(name, uri, format), nil
	case "kto":
		return datasets.KTOData(name, uri, format), nil
	default:
		return datasets.PreferenceData(name, uri, format), nil
	}
}

// fineTune builds the FineTune of the flags, without its layout: the
// planner gives that (or --accelerators and --zero pin it). output stands in
// for --output when it is empty (plan: where the result goes sizes nothing).
func (f *fineTuneFlags) fineTune(model, output string) (*llm.FineTune, hardware.Profile, error) {
	var errs []error
	acc, err := profile(f.on)
	if err != nil {
		errs = append(errs, err)
	}
	method := strings.ToLower(f.method)
	ctor, ok := stages[method]
	if !ok {
		errs = append(errs, fmt.Errorf("--method %q: one of %s", f.method, strings.Join(slices.Sorted(maps.Keys(stages)), ", ")))
	}
	format := datasets.Format(strings.ToLower(f.format))
	if format != datasets.Alpaca && format != datasets.ShareGPT {
		errs = append(errs, fmt.Errorf("--format %q: one of alpaca, sharegpt", f.format))
	}
	if len(f.datasetArgs) == 0 {
		errs = append(errs, errors.New("--dataset: required: at least one [NAME=]URI"))
	}
	var data []datasets.Dataset
	for i, arg := range f.datasetArgs {
		d, err := dataset(method, arg, format, i)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data = append(data, d)
	}
	switch {
	case f.full && (f.loraRankSet || f.qloraBits != 0):
		errs = append(errs, errors.New("--full with --lora-rank or --qlora-bits: give one method"))
	case f.loraRank < 1:
		errs = append(errs, fmt.Errorf("--lora-rank %d: must be at least 1", f.loraRank))
	}
	if (f.accelerators == 0) != (f.zero < 0) {
		errs = append(errs, fmt.Errorf("--accelerators %d and --zero %d: give both to pin a layout, or neither", f.accelerators, f.zero))
	}
	if f.tokens < 0 {
		errs = append(errs, fmt.Errorf("--tokens %d: must not be negative", f.tokens))
	}
	if output == "" {
		output = f.output
	}
	if output == "" {
		errs = append(errs, errors.New("--output: required: where the result is written, pvc://claim/path or s3://bucket/prefix"))
	}
	if len(errs) > 0 {
		return nil, acc, errors.Join(errs...)
	}
	name := f.name
	if name == "" {
		name = nameFor(model, method)
	}
	ft := ctor(name, modelID(model)).AddDataset(data...).Output(output)
	switch {
	case f.full:
		ft.FullTuning()
	case f.qloraBits != 0:
		ft.QLoRA(f.qloraBits, llm.Adapter{Rank: f.loraRank})
	default:
		ft.LoRA(llm.Adapter{Rank: f.loraRank})
	}
	if f.cutoff != 0 {
		ft.CutoffLength(f.cutoff)
	}
	if f.namespace != "" {
		ft.Job().Namespace(f.namespace)
	}
	return ft, acc, nil
}

// plan sizes ft on acc: Plan chooses, or Check answers the pinned layout.
func (f *fineTuneFlags) plan(ft *llm.FineTune, acc hardware.Profile) (llm.TrainingPlan, error) {
	var opts []llm.PlanOption
	if f.tokens > 0 {
		opts = append(opts, llm.Tokens(f.tokens))
	}
	if f.accelerators > 0 {
		return llm.Check(ft, acc, llm.Layout{Accelerators: f.accelerators, ZeROStage: f.zero}, opts...)
	}
	return llm.Plan(ft, acc, opts...)
}
