package market

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/modelsource"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/pod"
)

// The harness an evaluation runs, and the images it runs in.
//
// lm-evaluation-harness (EleutherAI) rather than OpenCompass or EvalScope:
// it is the harness behind the Open LLM Leaderboard and the one model
// cards quote; one CLI evaluates an OpenAI-compatible endpoint
// (local-completions) or local weights (its vllm backend, which runs on
// vLLM-Ascend as on CUDA); and its results file is one stable JSON shape,
// {"results": {task: {"metric,filter": value}}}, which is what the registry
// records. OpenCompass is what Cube Studio's template uses, but its
// configs are Python files and its summaries CSV; EvalScope wraps the
// same benchmarks for ModelScope.
//
// LMEvalPackage is 0.4.12 because the local-weight images run vLLM 0.18:
// 0.4.9.1 imports get_open_port from vllm.utils (lm_eval/models/vllm_causallms.py),
// which vLLM 0.14 dropped, and 0.4.9.2, which fixes that import, still
// imports get_tokenizer from vllm.transformers_utils.tokenizer, kept only
// until vLLM 0.13; 0.4.12 falls back for both, imports ray only for
// data-parallel runs and declares vllm>=0.18 (pyproject.toml). The api
// extra brings the HTTP clients of local-completions, the hf extra the
// transformers its default huggingface tokenizer backend loads
// (lm_eval/models/api_models.py); the vllm extra is left out so that pip
// keeps the image's own vLLM build. testdata/contracts/lm-eval.tsv holds
// the facts.
const (
	LMEvalPackage = "lm_eval[api,hf]==0.4.12"
	// DefaultEvalImage runs evaluations of served endpoints: the harness
	// only sends requests.
	DefaultEvalImage = "python:3.12-slim"
	// The images local-weight evaluations run in, the vLLM builds the serve
	// package pins for each vendor.
	DefaultEvalVLLMImage       = "vllm/vllm-openai:v0.18.0"
	DefaultEvalVLLMAscendImage = "quay.io/ascend/vllm-ascend:v0.18.0rc1"
)

// AnnotationVersion names, on an evaluation Job, the version it evaluates.
const AnnotationVersion = "market.cube.dev/version"

// EvaluationJob is a Workload: a batch/v1 Job that runs
// lm-evaluation-harness on benchmarks (its task names: mmlu, gsm8k,
// hellaswag, arc_challenge, ceval-valid…) against a registered version —
// through a served endpoint (Endpoint) or from its weights — and reports
// the scores in its termination message. RecordEvaluation writes them to
// the version as "<task>/<metric>" (with "/<filter>" when the task has
// one): "mmlu/acc", "gsm8k/exact_match/strict-match".
type EvaluationJob struct {
	pod.Builder[EvaluationJob]

	version     Version
	base        string // a LoRA adapter's base weights (Entry.Base)
	tasks       []string
	endpoint    string
	servedModel string
	fewShot     *int
	limit       float64
	batchSize   string
	concurrency int
	source      modelsource.Settings
	problems    field.ErrorList
}

// Evaluate returns an evaluation Job named name for version v on tasks.
// A LoRA adapter (FormatLoRA) is not a model vLLM can load by itself: its
// local weights are evaluated through Entry.Evaluate, which knows its base
// weights, and Build refuses them here; its served Endpoint can be
// evaluated from either.
func Evaluate(name string, v Version, tasks ...string) *EvaluationJob {
	e := &EvaluationJob{version: v.Clone(), tasks: slices.Clone(tasks)}
	podspec.Of(&e.Handle).Init(e, "modelevaluation", name)
	return e
}

func (e *EvaluationJob) fail(err *field.Error) { e.problems = append(e.problems, err) }

// Endpoint evaluates the model served at baseURL (an OpenAI-compatible
// API: a serve.Service's Endpoint, "http://bot-api.ml:8000", or its /v1
// base, "http://bot-api.ml:8000/v1") under servedModel, with lm-eval's
// local-completions model. A URL with no path gets /v1, as inference.NewClient
// does. The pod needs no accelerator.
func (e *EvaluationJob) Endpoint(baseURL, servedModel string) *EvaluationJob {
	if e == nil {
		return nil
	}
	switch p := field.NewPath("spec", "endpoint"); {
	case urlcheck.HasUserinfo(baseURL):
		e.fail(field.Forbidden(p, credentialsMessage))
	case !isHTTPURL(baseURL) || strings.ContainsAny(baseURL, ", \t\n"):
		e.fail(field.Invalid(p, baseURL, "must be an http(s) URL with a host, without commas or spaces"))
	}
	if servedModel == "" || strings.ContainsAny(servedModel, ", \t\n=") {
		e.fail(field.Invalid(field.NewPath("spec", "servedModel"), servedModel, "must be the served model name, without commas, spaces or '='"))
	}
	base := strings.TrimSuffix(baseURL, "/")
	if u, err := url.Parse(base); err == nil && u.Host != "" && u.Path == "" {
		base += "/v1"
	}
	e.endpoint, e.servedModel = base, servedModel
	return e
}

// FewShot sets the number of in-context examples (--num_fewshot); each
// task's default otherwise.
func (e *EvaluationJob) FewShot(n int) *EvaluationJob {
	if e == nil {
		return nil
	}
	if n < 0 {
		e.fail(field.Invalid(field.NewPath("spec", "fewShot"), n, "must not be negative"))
	}
	e.fewShot = &n
	return e
}

// SampleLimit evaluates only the first n examples of each task (--limit);
// a fraction below 1 takes that share. For smoke tests: limited scores are
// not comparable to published ones. (Limit is the pod's resource limit.)
func (e *EvaluationJob) SampleLimit(n float64) *EvaluationJob {
	if e == nil {
		return nil
	}
	// lm_eval/evaluator_utils.py takes a share below 1 and int(limit) from
	// 1 up, so 1.5 would silently evaluate 1 example.
	switch {
	case !(n > 0) || math.IsInf(n, 0):
		e.fail(field.Invalid(field.NewPath("spec", "sampleLimit"), n, "must be a positive number"))
	case n >= 1 && n != math.Trunc(n):
		e.fail(field.Invalid(field.NewPath("spec", "sampleLimit"), n, "a fraction below 1 or a whole number of examples"))
	}
	e.limit = n
	return e
}

// BatchSize sets --batch_size: a number, "auto" or "auto:N" (default
// auto for local weights, 1 for endpoints, which Parallelism parallelises).
func (e *EvaluationJob) BatchSize(size string) *EvaluationJob {
	if e == nil {
		return nil
	}
	if !validBatchSize(size) {
		e.fail(field.Invalid(field.NewPath("spec", "batchSize"), size, "must be a positive integer, auto or auto:N"))
	}
	e.batchSize = size
	return e
}

// validBatchSize reports whether size is N, auto or auto:N with N a
// positive integer: lm_eval/models/huggingface.py splits auto:N and reads N
// with int(), and a number that is not one fails in the pod.
func validBatchSize(size string) bool {
	if size == "auto" {
		return true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(size, "auto:"))
	return err == nil && n >= 1
}

// Parallelism sets how many requests run at once against an endpoint
// (local-completions' num_concurrent, default 8).
func (e *EvaluationJob) Parallelism(n int) *EvaluationJob {
	if e == nil {
		return nil
	}
	if n < 1 {
		e.fail(field.Invalid(field.NewPath("spec", "parallelism"), n, "must be at least 1"))
	}
	e.concurrency = n
	return e
}

// HFToken reads a Hugging Face token from a Secret (HF_TOKEN), for gated
// benchmark datasets and hf:// weights.
func (e *EvaluationJob) HFToken(ref pod.SecretKeyRef) *EvaluationJob {
	if e == nil {
		return nil
	}
	e.source.HFToken(field.NewPath("spec"), ref)
	return e
}

// evalScript runs the harness given as its arguments, then reduces the
// newest results_*.json it wrote to the numeric metrics and writes them to
// the termination message (4096 bytes at most: metrics past that are left
// out and counted in "dropped").
const evalScript = `set -eu
if ! command -v "$1" >/dev/null 2>&1; then
  pip install --quiet --no-cache-dir "$CUBE_PIP_PACKAGE"
fi
"$@"
python3 - <<'PY'
import glob, json, os
files = sorted(glob.glob(os.path.join(os.environ["CUBE_RESULTS_DIR"], "**", "results_*.json"), recursive=True), key=os.path.getmtime)
results = json.load(open(files[-1]))["results"]
out, dropped = {}, 0
for task in sorted(results):
    numeric = {k: v for k, v in sorted(results[task].items()) if isinstance(v, (int, float)) and not isinstance(v, bool)}
    trial = dict(out, **{task: numeric})
    if len(json.dumps({"results": trial, "dropped": dropped + 1})) > 4000:
        dropped += 1
        continue
    out = trial
open(os.environ["CUBE_TERMINATION_LOG"], "w").write(json.dumps({"results": out, "dropped": dropped}, separators=(",", ":")))
print("cube-evaluate:", json.dumps(out))
PY
`

// resultsDir is where the harness writes its results in the pod, and
// adapterDir where a LoRA adapter's claim is mounted when the base weights
// are on another claim (or on the hub).
const (
	resultsDir = "/results"
	adapterDir = "/adapter"
)

// evalSource reads where the harness finds the weights at uri: a directory
// of a claim mounted at ModelDir (claim and dir), or a hub repository with
// its revision (dir and revision).
func evalSource(p *field.Path, uri string) (claim, dir, revision string, errs field.ErrorList) {
	if errs = validateURI(p, uri); len(errs) > 0 {
		return "", "", "", errs
	}
	scheme, rest, _ := strings.Cut(uri, "://")
	switch scheme {
	case SchemePVC:
		var sub string
		claim, sub, _ = strings.Cut(rest, "/")
		dir = path.Join(ModelDir, sub)
	case SchemeHF:
		dir, revision, _ = strings.Cut(rest, "@")
	default:
		return "", "", "", field.ErrorList{field.Invalid(p, uri,
			"the harness reads pvc:// or hf:// weights: download the version to a claim first (market.Download)")}
	}
	if strings.Contains(dir+revision, ",") {
		// lm_eval/_cli/utils.py key_val_to_dict splits --model_args at ',':
		// the rest would set other model arguments.
		errs = append(errs, field.Invalid(p, uri, "the harness cannot read a path or revision with ','"))
	}
	return claim, dir, revision, errs
}

// Objects implements cube.Workload: one batch/v1 Job.
func (e *EvaluationJob) Objects() ([]client.Object, error) {
	job, err := e.Build()
	if err != nil {
		return nil, err
	}
	return []client.Object{job}, nil
}

// Build returns the Job, or every problem with a field path.
func (e *EvaluationJob) Build() (*batchv1.Job, error) {
	if e == nil {
		return nil, errors.New("market: EvaluationJob is nil: use market.Evaluate")
	}
	errs := podspec.Of(&e.Handle).ValidateMeta(63 - 6)
	errs = append(errs, e.problems...)
	errs = append(errs, e.source.Problems()...)
	vPath := field.NewPath("spec", "version")
	errs = append(errs, ValidateModelName(vPath.Child("model"), e.version.Model)...)
	if e.version.Number < 0 {
		errs = append(errs, field.Invalid(vPath.Child("number"), e.version.Number, "must not be negative"))
	}
	if len(e.tasks) == 0 {
		errs = append(errs, field.Required(field.NewPath("spec", "tasks"), "at least one lm-evaluation-harness task, such as mmlu or gsm8k"))
	}
	for i, t := range e.tasks {
		if t == "" || strings.ContainsAny(t, ", \t\n") || strings.HasPrefix(t, "-") {
			errs = append(errs, field.Invalid(field.NewPath("spec", "tasks").Index(i), t, "a task name without commas or spaces"))
		}
	}
	art := e.version.Artifact
	local := e.endpoint == ""
	// The weights the harness loads (vllm's pretrained, local-completions'
	// tokenizer): the version's own, or for a LoRA adapter the base
	// weights it applies to, with the adapter given apart to vllm.
	weightsURI, weightsPath, adapterURI := art.URI, vPath.Child("artifact", "uri"), ""
	if art.Format == FormatLoRA {
		switch {
		case e.base != "":
			weightsURI, weightsPath = e.base, field.NewPath("spec", "base")
			if local {
				adapterURI = art.URI
			}
		case local:
			// vLLM loads a model's full weights, not an adapter directory.
			errs = append(errs, field.Invalid(vPath.Child("artifact", "format"), art.Format,
				"a LoRA adapter is evaluated on the base weights it applies to: evaluate the Entry market.Get returns (its Base comes from the version's lineage), or a served Endpoint"))
		}
	}
	claim, weights, revision, srcErrs := evalSource(weightsPath, weightsURI)
	errs = append(errs, srcErrs...)
	var adapterClaim, adapter string
	if adapterURI != "" {
		// lm_eval/models/vllm_causallms.py at v0.4.12 gives lora_local_path
		// to vLLM as LoRARequest("finetuned", 1, lora_local_path), with
		// enable_lora, on top of pretrained: a directory in the pod.
		p := vPath.Child("artifact", "uri")
		var dir string
		var adapterErrs field.ErrorList
		adapterClaim, dir, _, adapterErrs = evalSource(p, adapterURI)
		errs = append(errs, adapterErrs...)
		switch {
		case len(adapterErrs) > 0:
		case art.Scheme() != SchemePVC:
			errs = append(errs, field.Invalid(p, adapterURI, "the harness loads a LoRA adapter from a directory: download it to a claim first (market.Download)"))
		case adapterClaim == claim:
			adapter = dir
		default:
			adapter = path.Join(adapterDir, strings.TrimPrefix(dir, ModelDir))
		}
	}
	profile, _ := podspec.Of(&e.Handle).Profile()
	if local && podspec.Of(&e.Handle).GPUCount() < 1 && podspec.Of(&e.Handle).SliceSetting() == nil {
		errs = append(errs, field.Required(field.NewPath("spec", "accelerators"),
			"evaluating local weights runs vLLM on accelerators: set On(profile).Accelerators(n), or evaluate a served Endpoint"))
	}
	if !local && e.batchSize != "" && strings.HasPrefix(e.batchSize, "auto") {
		errs = append(errs, field.Invalid(field.NewPath("spec", "batchSize"), e.batchSize, "an endpoint takes a number: auto sizes local weights only"))
	}
	if local && e.concurrency > 0 {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "parallelism"), "applies to endpoints"))
	}
	image := DefaultEvalImage
	if local {
		image = DefaultEvalVLLMImage
		if profile.Vendor == hardware.Huawei {
			image = DefaultEvalVLLMAscendImage
		}
	}
	tmpl, tmplErrs := podspec.Of(&e.Handle).Template(field.NewPath("spec", "template"), podspec.TemplateOptions{
		Container: "evaluate", DefaultImage: image, RestartPolicy: corev1.RestartPolicyNever, NoGPUs: !local,
	})
	errs = append(errs, tmplErrs...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	c := &tmpl.Spec.Containers[0]
	c.Env = append(c.Env,
		corev1.EnvVar{Name: "CUBE_PIP_PACKAGE", Value: LMEvalPackage},
		corev1.EnvVar{Name: "CUBE_RESULTS_DIR", Value: resultsDir},
		corev1.EnvVar{Name: "CUBE_TERMINATION_LOG", Value: terminationLog})
	c.Env = append(c.Env, e.source.Env(modelsource.HuggingFace)...)
	if cmd, _ := podspec.Of(&e.Handle).CommandLine(); len(cmd) == 0 {
		c.Command = []string{"sh", "-c", evalScript, "evaluate"}
		c.Args = e.harnessArgs(local, weights, revision, adapter)
	}
	c.TerminationMessagePath, c.TerminationMessagePolicy = terminationLog, corev1.TerminationMessageReadFile
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "results", MountPath: resultsDir})
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "results", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	if claim != "" {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "models", MountPath: ModelDir, ReadOnly: true})
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "models", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: true},
		}})
	}
	if adapter != "" && adapterClaim != claim {
		c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "adapter", MountPath: adapterDir, ReadOnly: true})
		tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "adapter", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: adapterClaim, ReadOnly: true},
		}})
	}
	meta := podspec.Of(&e.Handle).ObjectMeta(podspec.Of(&e.Handle).Name())
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	if e.version.Number > 0 {
		meta.Annotations[AnnotationVersion] = e.version.Ref()
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec:       batchv1.JobSpec{BackoffLimit: ptr.To[int32](1), Template: tmpl},
	}, nil
}

// harnessArgs is the lm_eval command line at v0.4.12: the run subcommand
// (lm_eval/_cli/harness.py) with the flags of lm_eval/_cli/run.py
// (--model, --model_args key=value,…, --tasks a,b, --num_fewshot, --limit,
// --batch_size, --output_path); the local-completions arguments are
// TemplateAPI's (lm_eval/models/api_models.py, registered in
// lm_eval/models/openai_completions.py) and the vllm ones VLLM's
// (lm_eval/models/vllm_causallms.py, whose extra keyword arguments, such as
// gpu_memory_utilization, go to vllm.LLM). A hub revision goes to revision,
// which both read, so that the weights evaluated are the version's.
//
// A LoRA adapter goes to vllm's lora_local_path on top of pretrained, the
// base weights (lm_eval/models/vllm_causallms.py: enable_lora and
// LoRARequest("finetuned", 1, lora_local_path), with lm-eval's
// max_lora_rank of 16).
func (e *EvaluationJob) harnessArgs(local bool, weights, revision, adapter string) []string {
	var model, modelArgs string
	batch := e.batchSize
	if local {
		model = "vllm"
		modelArgs = "pretrained=" + weights + ",tensor_parallel_size=" + strconv.Itoa(max(1, podspec.Of(&e.Handle).GPUCount())) + ",dtype=auto,gpu_memory_utilization=0.8"
		if revision != "" {
			modelArgs += ",revision=" + revision
		}
		if adapter != "" {
			modelArgs += ",lora_local_path=" + adapter
		}
		if batch == "" {
			batch = "auto"
		}
	} else {
		concurrency := e.concurrency
		if concurrency == 0 {
			concurrency = 8
		}
		model = "local-completions"
		modelArgs = "model=" + e.servedModel + ",base_url=" + e.endpoint + "/completions,num_concurrent=" + strconv.Itoa(concurrency) +
			",max_retries=3,tokenizer=" + weights
		if revision != "" {
			modelArgs += ",revision=" + revision
		}
		if batch == "" {
			batch = "1"
		}
	}
	args := []string{"lm_eval", "run", "--model", model, "--model_args", modelArgs, "--tasks", strings.Join(e.tasks, ","),
		"--batch_size", batch, "--output_path", resultsDir}
	if e.fewShot != nil {
		args = append(args, "--num_fewshot", strconv.Itoa(*e.fewShot))
	}
	if e.limit > 0 {
		args = append(args, "--limit", strconv.FormatFloat(e.limit, 'g', -1, 64))
	}
	return args
}

// ParseLMEvalResults reads lm-evaluation-harness results — the
// results_<date>.json file the harness writes (lm_eval/loggers/evaluation_tracker.py)
// or the reduced form an evaluation pod reports — into metrics named
// "<task>/<metric>" and "<task>/<metric>/<filter>" for filters other than
// "none". Standard errors and non-numeric entries (alias, "N/A") are left
// out.
func ParseLMEvalResults(data []byte) (map[string]float64, error) {
	var doc struct {
		Results map[string]map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse lm-eval results: %w", err)
	}
	if doc.Results == nil {
		return nil, errors.New("parse lm-eval results: no \"results\" object")
	}
	out := map[string]float64{}
	for task, metrics := range doc.Results {
		if task == "" {
			continue
		}
		for key, raw := range metrics {
			var v float64
			if json.Unmarshal(raw, &v) != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				continue
			}
			metric, filter, _ := strings.Cut(key, ",")
			if metric == "" || strings.HasSuffix(metric, "_stderr") {
				continue
			}
			name := task + "/" + metric
			if filter != "" && filter != "none" {
				name += "/" + filter
			}
			out[name] = v
		}
	}
	return out, nil
}

// RecordEvaluation writes the scores of a succeeded evaluation Job to the
// version it evaluated and returns the updated version.
func RecordEvaluation(ctx context.Context, c client.Client, reg *Registry, e *EvaluationJob) (Version, error) {
	if e == nil {
		return Version{}, errors.New("market: EvaluationJob is nil")
	}
	if c == nil || isNilValue(c) {
		return Version{}, errors.New("market: RecordEvaluation needs a client")
	}
	if err := reg.usable(); err != nil {
		return Version{}, err
	}
	job, message, err := jobSummary(ctx, c, podspec.Of(&e.Handle).NamespaceName(), podspec.Of(&e.Handle).Name(), "evaluate")
	if err != nil {
		return Version{}, err
	}
	ref := job.Annotations[AnnotationVersion]
	if ref == "" {
		return Version{}, fmt.Errorf("job %s/%s evaluated %s, which is not a registered version: register it to record scores", job.Namespace, job.Name, e.version.Model)
	}
	metrics, err := ParseLMEvalResults([]byte(message))
	if err != nil {
		return Version{}, fmt.Errorf("job %s/%s: %w", job.Namespace, job.Name, err)
	}
	if len(metrics) == 0 {
		return Version{}, fmt.Errorf("job %s/%s reported no metrics", job.Namespace, job.Name)
	}
	return reg.RecordMetrics(ctx, ref, metrics)
}
