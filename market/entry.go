package market

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/models"
)

// Entry is one model picked from the registry or the catalogue, with what
// the market does with it: Download, Evaluate, FineTune and Serve (market
// builds on serve, never the reverse, so serving needs no registry).
type Entry struct {
	// Version is the registered version, or for a catalogue model an
	// unregistered one (Number 0) whose artifact is its Hugging Face
	// repository.
	Version Version
	// Facts are the architecture the planners size from: the catalogue's,
	// or those of the base model the version's lineage leads to.
	Facts models.Model
	// HasFacts is false when no model in the lineage is in the catalogue:
	// serving then needs explicit sizes (or serve.Service.ModelFacts).
	HasFacts bool
	// Base is, for a LoRA adapter (artifact format FormatLoRA), the URI of
	// the full weights it applies to: the artifact of the nearest version
	// in its lineage that is not an adapter, or hf://<id> of a hub base
	// model. Empty for full weights, and for an adapter whose base cannot
	// be found.
	Base string
}

// FormatLoRA is the artifact format of a LoRA adapter, which is served on
// top of its base model's weights.
const FormatLoRA = "lora"

// Get finds a model: a registry reference ("support-bot@production") when
// reg is not nil and holds it, else a catalogue name or Hugging Face id
// ("Qwen/Qwen2.5-7B-Instruct"). reg may be nil for the catalogue alone.
func Get(ctx context.Context, reg *Registry, name string) (*Entry, error) {
	var regErr error
	if reg != nil {
		if ref, err := ParseReference(name); err == nil {
			v, err := reg.Resolve(ctx, ref)
			if err == nil {
				e := &Entry{Version: v}
				e.Facts, e.HasFacts = reg.architecture(ctx, v, 0)
				if v.Artifact.Format == FormatLoRA {
					e.Base = reg.baseWeights(ctx, v, 0)
				}
				return e, nil
			}
			if !errors.Is(err, ErrNotFound) {
				return nil, err
			}
			regErr = err
		}
	}
	m, err := models.Lookup(name)
	if err != nil {
		if regErr != nil {
			return nil, fmt.Errorf("get %q: not in the registry (%v) nor the catalogue: %w", name, regErr, err)
		}
		return nil, err
	}
	return &Entry{Version: catalogueVersion(m), Facts: m, HasFacts: true}, nil
}

// catalogueVersion is the unregistered version of a catalogue model.
func catalogueVersion(m models.Model) Version {
	return Version{
		Model:    Slug(m.Name),
		Artifact: Artifact{URI: "hf://" + m.HFID, Format: "safetensors", DType: m.DType},
		Stage:    StageNone,
	}
}

// Slug turns a model name into a registry model name: lower case, with
// every run of characters other than letters and digits replaced by '-'
// ("Qwen2.5-7B-Instruct" → "qwen2-5-7b-instruct"), cut to MaxModelName.
func Slug(name string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(name) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	s := b.String()
	if len(s) > MaxModelName {
		s = s[:MaxModelName]
	}
	return strings.Trim(s, "-")
}

// maxLineage bounds the walk up a lineage: a fine-tune of a fine-tune of
// a catalogue model is two steps; a cycle is a corrupt registry.
const maxLineage = 8

// architecture follows v's base models until one is in the catalogue:
// a Hugging Face id (with hf:// or modelscope:// and @revision stripped)
// or a registry reference to another version.
func (r *Registry) architecture(ctx context.Context, v Version, depth int) (models.Model, bool) {
	if depth > maxLineage {
		return models.Model{}, false
	}
	for _, candidate := range []string{v.Lineage.BaseModel, hubRepo(v.Artifact.URI)} {
		if candidate == "" {
			continue
		}
		if m, err := models.Lookup(hubRepo(candidate)); err == nil {
			return m, true
		}
		if ref, err := ParseReference(candidate); err == nil && r != nil {
			if parent, err := r.Resolve(ctx, ref); err == nil && parent.Ref() != v.Ref() {
				if m, ok := r.architecture(ctx, parent, depth+1); ok {
					return m, true
				}
			}
		}
	}
	return models.Model{}, false
}

// baseWeights follows an adapter's lineage to the full weights it applies
// to.
func (r *Registry) baseWeights(ctx context.Context, v Version, depth int) string {
	base := v.Lineage.BaseModel
	if depth > maxLineage || base == "" {
		return ""
	}
	if ref, err := ParseReference(base); err == nil {
		parent, err := r.Resolve(ctx, ref)
		if err != nil || parent.Ref() == v.Ref() {
			return ""
		}
		if parent.Artifact.Format == FormatLoRA {
			return r.baseWeights(ctx, parent, depth+1)
		}
		return parent.Artifact.URI
	}
	if strings.Contains(base, "://") {
		return base
	}
	if isHubRepo(base) {
		return "hf://" + base
	}
	return ""
}

// hubRepo strips a hub scheme and revision: "hf://org/name@rev" → "org/name".
func hubRepo(s string) string {
	for _, scheme := range []string{SchemeHF + "://", SchemeModelScope + "://"} {
		if rest, ok := strings.CutPrefix(s, scheme); ok {
			repo, _, _ := strings.Cut(rest, "@")
			return repo
		}
	}
	if strings.Contains(s, "://") {
		return ""
	}
	return s
}

// Download returns a Job named name that fetches the entry's hub weights
// into claim and registers them as a version of the entry's model.
func (e *Entry) Download(name, claim string) *DownloadJob {
	if e == nil {
		return Download(name, "", claim)
	}
	v := e.Version
	return Download(name, v.Artifact.URI, claim).Register(v.Model, v.Artifact.Format, v.Artifact.DType)
}

// Evaluate returns an evaluation Job named name of the entry on tasks. A
// LoRA adapter's local weights are evaluated on its Base: vLLM loads the
// base weights and applies the adapter; through an Endpoint, the base's
// tokenizer counts the tokens.
func (e *Entry) Evaluate(name string, tasks ...string) *EvaluationJob {
	if e == nil {
		return Evaluate(name, Version{}, tasks...)
	}
	ev := Evaluate(name, e.Version, tasks...)
	if e.Version.Artifact.Format == FormatLoRA {
		ev.base = e.Base
	}
	return ev
}

// TrainingRun is the lineage a fine-tuning workload records in the version
// it produces.
type TrainingRun struct {
	// Job is the kind and name of the training object, "PyTorchJob/sft-bot".
	Job             string
	Datasets        []string
	Hyperparameters map[string]string
}

// Trainer is the seam between the market and fine-tuning builders: a
// workload that trains, and says how. TrainJob adapts any training
// workload to it with the run it performs: an llm fine-tune (llm.SFT,
// llm.DPO…), a train.PyTorch job, a DeepSpeed job:
//
//	market.TrainJob(sft, market.TrainingRun{
//		Job:             "PyTorchJob/support-bot-sft-v2",
//		Datasets:        []string{"pvc://datasets/support/sft.json"},
//		Hyperparameters: map[string]string{"method": "lora", "lora_rank": "16"},
//	})
//
// A builder of one's own may implement it directly.
type Trainer interface {
	cube.Workload
	TrainingRun() TrainingRun
}

// TrainJob adapts a training workload and the run it performs to a
// Trainer. The maps and slices of run are copied.
func TrainJob(w cube.Workload, run TrainingRun) Trainer {
	run.Datasets = slices.Clone(run.Datasets)
	run.Hyperparameters = maps.Clone(run.Hyperparameters)
	return trainJob{Workload: w, run: run}
}

type trainJob struct {
	cube.Workload
	run TrainingRun
}

func (t trainJob) TrainingRun() TrainingRun {
	run := t.run
	run.Datasets = slices.Clone(run.Datasets)
	run.Hyperparameters = maps.Clone(run.Hyperparameters)
	return run
}

// Objects reports a missing workload instead of panicking on it.
func (t trainJob) Objects() ([]client.Object, error) {
	if t.Workload == nil || isNilValue(t.Workload) {
		return nil, errors.New("market: TrainJob has no workload")
	}
	return t.Workload.Objects()
}

// FineTuneRun is a fine-tune of an entry: the training workload, and the
// version to register once it has succeeded.
type FineTuneRun struct {
	// Trainer is the workload to apply.
	Trainer Trainer
	// Output is the version Register will create: the model, the artifact
	// the trainer writes, and the lineage (base version, datasets,
	// release and job, hyperparameters).
	Output Version
}

// Objects implements cube.Workload with the trainer's objects.
func (f *FineTuneRun) Objects() ([]client.Object, error) {
	if f == nil || f.Trainer == nil || isNilValue(f.Trainer) {
		return nil, errors.New("market: FineTuneRun has no trainer: use Entry.FineTune")
	}
	return f.Trainer.Objects()
}

// FineTune prepares a fine-tune of the entry into a new version of model
// whose weights the trainer writes to output (pvc://claim/path or
// s3://bucket/prefix). build receives the URI of the base weights and the
// output URI and returns the trainer; the release is the one its objects
// carry (cube.dev/release).
func (e *Entry) FineTune(model string, output Artifact, build func(base, output string) Trainer) (*FineTuneRun, error) {
	var errs field.ErrorList
	if e == nil {
		return nil, errors.New("market: fine-tune of a nil entry: use market.Get")
	}
	errs = append(errs, ValidateModelName(field.NewPath("model"), model)...)
	errs = append(errs, output.validate(field.NewPath("output"))...)
	if s := output.Scheme(); s == SchemeHF || s == SchemeModelScope {
		errs = append(errs, field.Invalid(field.NewPath("output", "uri"), output.URI, "a trainer writes to pvc:// or s3://"))
	}
	if build == nil {
		errs = append(errs, field.Required(field.NewPath("build"), "a function that returns the trainer"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("fine-tune %s: %w", e.Version.Model, errs.ToAggregate())
	}
	t := build(e.Version.Artifact.URI, output.URI)
	if t == nil || isNilValue(t) {
		return nil, fmt.Errorf("fine-tune %s: build returned no trainer", e.Version.Model)
	}
	objs, err := t.Objects()
	if err != nil {
		return nil, fmt.Errorf("fine-tune %s: %w", e.Version.Model, err)
	}
	release := ""
	if len(objs) > 0 && !isNilValue(objs[0]) {
		release = objs[0].GetLabels()[cube.LabelRelease]
	}
	run := t.TrainingRun()
	base := e.Version.Ref()
	if e.Version.Number == 0 {
		base = hubRepo(e.Version.Artifact.URI)
	}
	out := Version{
		Model:    model,
		Artifact: output,
		Lineage: Lineage{
			BaseModel: base, Datasets: run.Datasets, TrainingRelease: release,
			TrainingJob: run.Job, Hyperparameters: run.Hyperparameters,
		},
		Description: "fine-tuned from " + base,
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("fine-tune %s: %w", e.Version.Model, err)
	}
	return &FineTuneRun{Trainer: t, Output: out}, nil
}

// Register records the fine-tuned version; call it once the trainer's
// release has succeeded (cube.Release.Wait).
func (f *FineTuneRun) Register(ctx context.Context, reg *Registry) (Version, error) {
	if f == nil {
		return Version{}, errors.New("market: FineTuneRun is nil")
	}
	return reg.Register(ctx, f.Output)
}
