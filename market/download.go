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
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
)

// The images and packages a download runs. The downloader tools are
// installed with pip at start unless the image already has them, so an
// image of a team's own with hf or modelscope on PATH skips the install.
const (
	DefaultDownloadImage = "python:3.12-slim"
	// DefaultS3DownloadImage is the AWS CLI, whose `aws s3 sync` skips the
	// files a previous attempt completed.
	DefaultS3DownloadImage = "amazon/aws-cli:2.32.8"
	// HFPackage provides the hf command (huggingface_hub ≥ 0.34) and, with
	// the extra, hf_transfer.
	HFPackage = "huggingface_hub[hf_transfer]==0.35.3"
	// ModelScopePackage provides the modelscope command.
	ModelScopePackage = "modelscope==1.29.0"
)

// ModelDir is where the claim is mounted in the download pod.
const ModelDir = "/models"

// terminationLog is the container's terminationMessagePath, the
// Kubernetes default, named to the scripts in CUBE_TERMINATION_LOG.
const terminationLog = "/dev/termination-log"

// DownloadJob is a Workload: a batch/v1 Job that fetches a model from
// Hugging Face (hf download), ModelScope (modelscope download) or S3 (aws
// s3 sync) into a path on a PersistentVolumeClaim. Its pod settings
// (image, resources, node placement, proxies through Env) come from the
// shared pod builder.
//
// Downloads resume: the three tools keep what a failed attempt fetched
// (hf and modelscope keep partial files in the target directory, aws s3
// sync skips complete files), and the Job retries the pod (RetryLimit,
// default 4) on the same claim. Pin the revision (hf://org/name@<commit>
// or Revision) to register exactly what was tested; without one the hub's
// main branch is fetched and recorded as such.
//
// The pod prints the bytes fetched every 30 seconds to its log, then
// writes a summary to its termination message: the total size and the
// checksum Checksum defines, of every file but the tools' own bookkeeping
// (.cache, ._____temp). RegisterDownload reads it and registers the
// version.
type DownloadJob struct {
	pod.Builder[DownloadJob]

	source        string
	revision      string
	claim, into   string
	model         string
	format        string
	dtype         models.DType
	include       []string
	exclude       []string
	retries       int32
	hfToken       *secretKey
	hfEndpoint    string
	hfTransfer    bool
	msToken       *secretKey
	msEndpoint    string
	s3Secret      string
	s3Endpoint    string
	s3Region      string
	problems      field.ErrorList
	maxWorkers    int
	skipChecksums bool
}

type secretKey struct{ name, key string }

// Download returns a Job named name that fetches source — hf://org/name,
// modelscope://org/name or s3://bucket/prefix, with @revision for the
// hubs — into claim. Register names the registry model it becomes
// (default: name).
func Download(name, source, claim string) *DownloadJob {
	d := &DownloadJob{source: source, claim: claim, model: name, format: "safetensors", retries: 4}
	podspec.Of(&d.Handle).Init(d, "modeldownload", name)
	return d
}

func (d *DownloadJob) fail(err *field.Error) {
	if err != nil {
		d.problems = append(d.problems, err)
	}
}

// validateEndpoint checks an http(s) endpoint a pod reads from the
// environment: credentials in it would be rendered into the Job's spec, so
// they are refused without repeating the value.
func validateEndpoint(p *field.Path, endpoint string) *field.Error {
	switch {
	case urlcheck.HasUserinfo(endpoint):
		return field.Forbidden(p, credentialsMessage)
	case !isHTTPURL(endpoint):
		return field.Invalid(p, endpoint, "must be an http(s) URL with a host")
	}
	return nil
}

// isHTTPURL reports whether s is an http or https URL naming a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Hostname() != ""
}

// Into sets the directory on the claim (default: the repository's path,
// "Qwen/Qwen2.5-7B-Instruct", or the bucket prefix).
func (d *DownloadJob) Into(dir string) *DownloadJob {
	if d != nil {
		d.into = dir
	}
	return d
}

// Revision pins the hub revision: a commit, tag or branch. It replaces an
// @revision in the source.
func (d *DownloadJob) Revision(rev string) *DownloadJob {
	if d != nil {
		d.revision = rev
	}
	return d
}

// Register names the model the download registers as (a new version of
// it), its format and precision.
func (d *DownloadJob) Register(model, format string, dtype models.DType) *DownloadJob {
	if d != nil {
		d.model, d.format, d.dtype = model, format, dtype
	}
	return d
}

// Include adds glob patterns of the files to fetch (all when none).
func (d *DownloadJob) Include(patterns ...string) *DownloadJob {
	if d != nil {
		d.include = append(d.include, patterns...)
	}
	return d
}

// Exclude adds glob patterns of files to skip.
func (d *DownloadJob) Exclude(patterns ...string) *DownloadJob {
	if d != nil {
		d.exclude = append(d.exclude, patterns...)
	}
	return d
}

// RetryLimit sets how many failed pods the Job replaces (default 4),
// each resuming where the last stopped.
func (d *DownloadJob) RetryLimit(n int) *DownloadJob {
	if d == nil {
		return nil
	}
	if n < 0 || n > math.MaxInt32 {
		d.fail(field.Invalid(field.NewPath("spec", "retryLimit"), n, "must be between 0 and 2147483647"))
		return d
	}
	d.retries = int32(n)
	return d
}

// MaxWorkers sets how many files the hub tools fetch at once (their
// --max-workers; 8 when unset).
func (d *DownloadJob) MaxWorkers(n int) *DownloadJob {
	if d == nil {
		return nil
	}
	if n < 1 {
		d.fail(field.Invalid(field.NewPath("spec", "maxWorkers"), n, "must be at least 1"))
	}
	d.maxWorkers = n
	return d
}

// SkipChecksum leaves the checksum out of the summary: hashing reads
// every byte once more, minutes for a 70B model.
func (d *DownloadJob) SkipChecksum() *DownloadJob {
	if d != nil {
		d.skipChecksums = true
	}
	return d
}

func (d *DownloadJob) secret(setting string, into **secretKey, name, key string) *DownloadJob {
	if d == nil {
		return nil
	}
	p := field.NewPath("spec", setting)
	if name == "" || key == "" {
		d.fail(field.Required(p, "secret name and key are required"))
	} else {
		d.problems = append(d.problems, podspec.ValidateSecretKey(p, name, key)...)
	}
	*into = &secretKey{name: name, key: key}
	return d
}

// HFToken reads the Hugging Face token (HF_TOKEN, which huggingface_hub
// reads in utils/_auth.py) from key of a Secret, never a literal.
func (d *DownloadJob) HFToken(secret, key string) *DownloadJob {
	if d == nil {
		return nil
	}
	return d.secret("hfToken", &d.hfToken, secret, key)
}

// HFEndpoint fetches from a Hugging Face mirror (HF_ENDPOINT, read by
// huggingface_hub/constants.py), such as https://hf-mirror.com.
func (d *DownloadJob) HFEndpoint(url string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.fail(validateEndpoint(field.NewPath("spec", "hfEndpoint"), url))
	d.hfEndpoint = url
	return d
}

// HFTransfer turns on hf_transfer (HF_HUB_ENABLE_HF_TRANSFER=1,
// huggingface_hub/constants.py), the Rust downloader, for repositories not
// stored on Xet.
func (d *DownloadJob) HFTransfer() *DownloadJob {
	if d != nil {
		d.hfTransfer = true
	}
	return d
}

// ModelScopeToken reads the ModelScope access token from key of a Secret;
// the pod logs in with `modelscope login --token` before downloading.
func (d *DownloadJob) ModelScopeToken(secret, key string) *DownloadJob {
	if d == nil {
		return nil
	}
	return d.secret("modelScopeToken", &d.msToken, secret, key)
}

// ModelScopeEndpoint fetches from another ModelScope site
// (MODELSCOPE_DOMAIN, modelscope/hub/constants.py), such as
// www.modelscope.ai.
func (d *DownloadJob) ModelScopeEndpoint(domain string) *DownloadJob {
	if d == nil {
		return nil
	}
	switch p := field.NewPath("spec", "modelScopeEndpoint"); {
	case urlcheck.HasUserinfo(domain) || !strings.Contains(domain, "://") && strings.Contains(domain, "@"):
		d.fail(field.Forbidden(p, credentialsMessage))
	case domain == "" || strings.ContainsAny(domain, " \t\n\"'$`\\"):
		d.fail(field.Invalid(p, domain, "must be a host name or URL"))
	}
	d.msEndpoint = domain
	return d
}

// S3Credentials names the Secret holding AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY; without it the AWS CLI uses the pod's identity.
func (d *DownloadJob) S3Credentials(secret string) *DownloadJob {
	if d == nil {
		return nil
	}
	if secret == "" {
		d.fail(field.Required(field.NewPath("spec", "s3Credentials"), "a Secret name is required"))
	} else {
		d.problems = append(d.problems, podspec.ValidateSecretKey(field.NewPath("spec", "s3Credentials"), secret, "AWS_ACCESS_KEY_ID")...)
	}
	d.s3Secret = secret
	return d
}

// S3Endpoint points the download at an S3-compatible store (MinIO, Ceph)
// through AWS_ENDPOINT_URL.
func (d *DownloadJob) S3Endpoint(url string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.fail(validateEndpoint(field.NewPath("spec", "s3Endpoint"), url))
	d.s3Endpoint = url
	return d
}

// S3Region sets AWS_DEFAULT_REGION: lowercase letters, digits and '-'
// (us-east-1, cn-north-1), as AWS and S3-compatible stores name regions.
func (d *DownloadJob) S3Region(region string) *DownloadJob {
	if d == nil {
		return nil
	}
	if region == "" || strings.Trim(region, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" {
		d.fail(field.Invalid(field.NewPath("spec", "s3Region"), region, "a region name: lowercase letters, digits and '-'"))
	}
	d.s3Region = region
	return d
}

// source is a parsed download source.
type source struct {
	scheme, repo, revision string
}

func parseDownloadSource(p *field.Path, uri string) (source, field.ErrorList) {
	errs := validateURI(p, uri)
	if len(errs) > 0 {
		return source{}, errs
	}
	scheme, rest, _ := strings.Cut(uri, "://")
	if scheme == SchemePVC {
		return source{}, field.ErrorList{field.Invalid(p, uri, "is already on a claim: register it instead of downloading it")}
	}
	s := source{scheme: scheme, repo: rest}
	if scheme != SchemeS3 {
		s.repo, s.revision, _ = strings.Cut(rest, "@")
	}
	return s, nil
}

// Target returns the artifact URI of the downloaded model:
// pvc://<claim>/<dir>.
func (d *DownloadJob) Target() string {
	if d == nil {
		return ""
	}
	return "pvc://" + d.claim + "/" + d.dir()
}

func (d *DownloadJob) dir() string {
	if d.into != "" {
		return strings.Trim(path.Clean("/"+d.into), "/")
	}
	_, rest, _ := strings.Cut(d.source, "://")
	rest, _, _ = strings.Cut(rest, "@")
	return strings.Trim(path.Clean("/"+rest), "/")
}

// downloadScript runs the tool given as its arguments, reporting progress
// every 30 seconds, then writes the summary to the termination message.
// Every value comes from the environment or the arguments, so nothing the
// caller gives is parsed by the shell.
const downloadScript = `set -eu
mkdir -p "$CUBE_MODEL_DIR"
if [ -n "${CUBE_PIP_PACKAGE:-}" ] && ! command -v "$1" >/dev/null 2>&1; then
  pip install --quiet --no-cache-dir "$CUBE_PIP_PACKAGE"
fi
if [ -n "${MODELSCOPE_API_TOKEN:-}" ]; then
  modelscope login --token "$MODELSCOPE_API_TOKEN" >/dev/null
fi
( while sleep 30 >/dev/null 2>&1; do echo "cube-download: $(du -sb "$CUBE_MODEL_DIR" | cut -f1) bytes so far"; done ) &
progress=$!
"$@"
kill "$progress" 2>/dev/null || true
cd "$CUBE_MODEL_DIR"
export LC_ALL=C
bytes=0
for n in $(find . -type f ! -path './.cache/*' ! -path './._____temp/*' -printf '%s\n'); do bytes=$((bytes + n)); done
sum=""
if [ -z "${CUBE_SKIP_CHECKSUM:-}" ]; then
  sum=sha256:$(find . -type f ! -path './.cache/*' ! -path './._____temp/*' -print0 | sort -z | xargs -0 -r sha256sum | sha256sum | cut -d' ' -f1)
fi
printf '{"bytes":%s,"checksum":"%s"}' "$bytes" "$sum" > "$CUBE_TERMINATION_LOG"
echo "cube-download: done, $bytes bytes"
`

// Objects implements cube.Workload: one batch/v1 Job.
func (d *DownloadJob) Objects() ([]client.Object, error) {
	job, err := d.Build()
	if err != nil {
		return nil, err
	}
	return []client.Object{job}, nil
}

// Build returns the Job, or every problem with a field path.
func (d *DownloadJob) Build() (*batchv1.Job, error) {
	if d == nil {
		return nil, errors.New("market: DownloadJob is nil: use market.Download")
	}
	errs := podspec.Of(&d.Handle).ValidateMeta(63 - 6) // the Job controller suffixes pod names
	errs = append(errs, d.problems...)
	src, srcErrs := parseDownloadSource(field.NewPath("spec", "source"), d.source)
	errs = append(errs, srcErrs...)
	if d.claim == "" {
		errs = append(errs, field.Required(field.NewPath("spec", "claim"), "the PersistentVolumeClaim the model is written to"))
	} else {
		for _, msg := range validation.IsDNS1123Subdomain(d.claim) {
			errs = append(errs, field.Invalid(field.NewPath("spec", "claim"), d.claim, msg))
		}
	}
	switch {
	case strings.HasPrefix(d.into, "/") || hasDotSegment(d.into):
		errs = append(errs, field.Invalid(field.NewPath("spec", "into"), d.into, "a directory relative to the claim, without '.' or '..' segments"))
	case len(srcErrs) == 0 && (d.dir() == "" || d.dir() == "."):
		errs = append(errs, field.Invalid(field.NewPath("spec", "into"), d.into, "must name a directory on the claim"))
	case len(srcErrs) == 0 && len(validation.IsDNS1123Subdomain(d.claim)) == 0 && len(validateURI(field.NewPath("spec", "into"), d.Target())) > 0:
		// RegisterDownload records Target as the artifact URI: what the
		// registry would refuse is refused before the download runs.
		errs = append(errs, field.Invalid(field.NewPath("spec", "into"), d.into, "must not contain spaces, quotes, '$' or '\\'"))
	}
	errs = append(errs, ValidateModelName(field.NewPath("spec", "register", "model"), d.model)...)
	if d.dtype != "" && !d.dtype.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "register", "dtype"), d.dtype, []models.DType{models.FP32, models.BF16, models.FP16, models.FP8, models.INT8, models.INT4}))
	}
	if d.format != "" && !slices.Contains(formats, d.format) {
		errs = append(errs, field.NotSupported(field.NewPath("spec", "register", "format"), d.format, formats))
	}
	errs = append(errs, validatePatterns(field.NewPath("spec", "include"), d.include)...)
	errs = append(errs, validatePatterns(field.NewPath("spec", "exclude"), d.exclude)...)
	rev := src.revision
	if d.revision != "" {
		rev = d.revision
	}
	if rev != "" && (strings.HasPrefix(rev, "-") || strings.ContainsAny(rev, " \t\n\"'$`\\")) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "revision"), rev, "a commit, tag or branch"))
	}
	if src.scheme == SchemeS3 && rev != "" {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "revision"), "S3 has no revisions"))
	}
	d.checkCredentials(src.scheme, &errs)

	defaultImage := DefaultDownloadImage
	if src.scheme == SchemeS3 {
		defaultImage = DefaultS3DownloadImage
	}
	tmplPath := field.NewPath("spec", "template")
	tmpl, tmplErrs := podspec.Of(&d.Handle).Template(tmplPath, podspec.TemplateOptions{
		Container: "download", DefaultImage: defaultImage, RestartPolicy: corev1.RestartPolicyNever,
	})
	errs = append(errs, tmplErrs...)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}

	dest := path.Join(ModelDir, d.dir())
	c := &tmpl.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: "CUBE_MODEL_DIR", Value: dest},
		corev1.EnvVar{Name: "CUBE_TERMINATION_LOG", Value: terminationLog})
	if d.skipChecksums {
		c.Env = append(c.Env, corev1.EnvVar{Name: "CUBE_SKIP_CHECKSUM", Value: "1"})
	}
	c.Env = append(c.Env, d.toolEnv(src.scheme)...)
	if cmd, _ := podspec.Of(&d.Handle).CommandLine(); len(cmd) == 0 {
		c.Command = []string{"sh", "-c", downloadScript, "download"}
		c.Args = d.toolArgs(src, rev, dest)
	}
	c.TerminationMessagePath, c.TerminationMessagePolicy = terminationLog, corev1.TerminationMessageReadFile
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "models", MountPath: ModelDir})
	tmpl.Spec.Volumes = append(tmpl.Spec.Volumes, corev1.Volume{Name: "models", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: d.claim},
	}})
	meta := podspec.Of(&d.Handle).ObjectMeta(podspec.Of(&d.Handle).Name())
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[AnnotationSource] = d.source
	if rev != "" {
		meta.Annotations[AnnotationRevision] = rev
	}
	meta.Annotations[AnnotationTarget] = d.Target()
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To(d.retries),
			Template:     tmpl,
		},
	}, nil
}

// validatePatterns checks glob patterns of files in a repository or under
// a prefix: a pattern that starts like a flag would be read as one, and one
// that is absolute or climbs with '..' matches nothing the tools list (hf
// and modelscope match repository paths, aws s3 sync keys under the
// prefix), so the download would silently fetch nothing.
func validatePatterns(p *field.Path, patterns []string) field.ErrorList {
	var errs field.ErrorList
	for i, pat := range patterns {
		if pat == "" || strings.ContainsAny(pat, " \t\n") || strings.HasPrefix(pat, "-") || strings.HasPrefix(pat, "/") || hasDotSegment(pat) {
			errs = append(errs, field.Invalid(p.Index(i), pat, "a glob pattern relative to the repository: no whitespace, no leading '-' or '/', no '.' or '..' segments"))
		}
	}
	return errs
}

// Annotations a download Job carries, which RegisterDownload reads back.
const (
	AnnotationSource   = "market.cube.dev/source"
	AnnotationRevision = "market.cube.dev/revision"
	AnnotationTarget   = "market.cube.dev/target"
)

func (d *DownloadJob) checkCredentials(scheme string, errs *field.ErrorList) {
	wrong := func(setting, want string) {
		*errs = append(*errs, field.Forbidden(field.NewPath("spec", setting), fmt.Sprintf("applies to %s:// sources, not %s://", want, scheme)))
	}
	if scheme == "" {
		return
	}
	if scheme != SchemeHF {
		if d.hfToken != nil {
			wrong("hfToken", SchemeHF)
		}
		if d.hfEndpoint != "" {
			wrong("hfEndpoint", SchemeHF)
		}
		if d.hfTransfer {
			wrong("hfTransfer", SchemeHF)
		}
	}
	if scheme != SchemeModelScope {
		if d.msToken != nil {
			wrong("modelScopeToken", SchemeModelScope)
		}
		if d.msEndpoint != "" {
			wrong("modelScopeEndpoint", SchemeModelScope)
		}
	}
	if scheme != SchemeS3 && (d.s3Secret != "" || d.s3Endpoint != "" || d.s3Region != "") {
		wrong("s3", SchemeS3)
	}
}

func secretEnv(name string, s *secretKey) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: s.name}, Key: s.key,
	}}}
}

func (d *DownloadJob) toolEnv(scheme string) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, value string) { env = append(env, corev1.EnvVar{Name: name, Value: value}) }
	switch scheme {
	case SchemeHF:
		add("CUBE_PIP_PACKAGE", HFPackage)
		if d.hfToken != nil {
			env = append(env, secretEnv("HF_TOKEN", d.hfToken))
		}
		if d.hfEndpoint != "" {
			add("HF_ENDPOINT", d.hfEndpoint)
		}
		if d.hfTransfer {
			add("HF_HUB_ENABLE_HF_TRANSFER", "1")
		}
	case SchemeModelScope:
		add("CUBE_PIP_PACKAGE", ModelScopePackage)
		if d.msToken != nil {
			env = append(env, secretEnv("MODELSCOPE_API_TOKEN", d.msToken))
		}
		if d.msEndpoint != "" {
			add("MODELSCOPE_DOMAIN", d.msEndpoint)
		}
	case SchemeS3:
		if d.s3Secret != "" {
			env = append(env,
				secretEnv("AWS_ACCESS_KEY_ID", &secretKey{d.s3Secret, "AWS_ACCESS_KEY_ID"}),
				secretEnv("AWS_SECRET_ACCESS_KEY", &secretKey{d.s3Secret, "AWS_SECRET_ACCESS_KEY"}))
		}
		if d.s3Endpoint != "" {
			add("AWS_ENDPOINT_URL", d.s3Endpoint)
		}
		if d.s3Region != "" {
			add("AWS_DEFAULT_REGION", d.s3Region)
		}
	}
	return env
}

// toolArgs is the download command: the flags of huggingface_hub's
// src/huggingface_hub/cli/download.py at v0.35.3 (hf download REPO
// --revision --local-dir --max-workers, and --include/--exclude, each
// nargs="*": one flag followed by every pattern, since a repeated flag
// replaces the patterns before it), of modelscope's modelscope/cli/download.py
// at v1.29.0 (--model --revision --local_dir --max-workers, --include and
// --exclude nargs="*" likewise), and aws s3 sync, whose filters repeat
// (testdata/contracts holds the facts, checked by TestRenderedCommandsKeepTheContracts).
func (d *DownloadJob) toolArgs(src source, rev, dest string) []string {
	workers := d.maxWorkers
	if workers == 0 {
		workers = 8
	}
	switch src.scheme {
	case SchemeHF:
		args := []string{"hf", "download", src.repo, "--local-dir", dest, "--max-workers", strconv.Itoa(workers)}
		if rev != "" {
			args = append(args, "--revision", rev)
		}
		return appendPatterns(args, d.include, d.exclude)
	case SchemeModelScope:
		args := []string{"modelscope", "download", "--model", src.repo, "--local_dir", dest, "--max-workers", strconv.Itoa(workers)}
		if rev != "" {
			args = append(args, "--revision", rev)
		}
		return appendPatterns(args, d.include, d.exclude)
	}
	args := []string{"aws", "s3", "sync", "s3://" + src.repo, dest, "--no-progress"}
	for _, p := range d.exclude {
		args = append(args, "--exclude", p)
	}
	if len(d.include) > 0 {
		// aws s3 sync includes everything unless excluded: exclude all, then
		// include the patterns (later filters win).
		args = append(args, "--exclude", "*")
		for _, p := range d.include {
			args = append(args, "--include", p)
		}
	}
	return args
}

// appendPatterns adds the hub tools' --include and --exclude, each once
// with all its patterns (both parsers declare them nargs="*").
func appendPatterns(args, include, exclude []string) []string {
	if len(include) > 0 {
		args = append(append(args, "--include"), include...)
	}
	if len(exclude) > 0 {
		args = append(append(args, "--exclude"), exclude...)
	}
	return args
}

// DownloadSummary is what a finished download pod reports.
type DownloadSummary struct {
	Bytes    int64  `json:"bytes"`
	Checksum string `json:"checksum"`
}

// ParseDownloadSummary reads a download pod's termination message.
func ParseDownloadSummary(message string) (DownloadSummary, error) {
	var s DownloadSummary
	dec := json.NewDecoder(strings.NewReader(message))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return DownloadSummary{}, fmt.Errorf("parse download summary: %w", err)
	}
	var errs field.ErrorList
	if s.Bytes < 0 {
		errs = append(errs, field.Invalid(field.NewPath("bytes"), s.Bytes, "must not be negative"))
	}
	if s.Checksum != "" && !validChecksum(s.Checksum) {
		errs = append(errs, field.Invalid(field.NewPath("checksum"), s.Checksum, checksumMessage))
	}
	if len(errs) > 0 {
		return DownloadSummary{}, fmt.Errorf("parse download summary: %w", errs.ToAggregate())
	}
	return s, nil
}

// ErrNotFinished is returned (wrapped) when a Job has not succeeded yet.
var ErrNotFinished = errors.New("job has not succeeded")

// jobSummary returns the termination message of the container of the
// succeeded pod of Job name.
func jobSummary(ctx context.Context, c client.Client, namespace, name, container string) (*batchv1.Job, string, error) {
	job := &batchv1.Job{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, job); err != nil {
		return nil, "", fmt.Errorf("get job %s/%s: %w", namespace, name, err)
	}
	if !jobSucceeded(job) {
		return job, "", fmt.Errorf("job %s/%s: %w", namespace, name, ErrNotFinished)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{batchv1.JobNameLabel: name}); err != nil {
		return job, "", fmt.Errorf("list pods of job %s/%s: %w", namespace, name, err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0 {
				return job, cs.State.Terminated.Message, nil
			}
		}
	}
	return job, "", fmt.Errorf("job %s/%s succeeded but no pod of it reports container %q's result (pods deleted?)", namespace, name, container)
}

func jobSucceeded(job *batchv1.Job) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// RegisterDownload registers the model a succeeded download Job fetched:
// a new version of the model Register named, with the artifact on the
// claim, its size and checksum from the pod's summary, and the source
// (with its revision) as the base model. Called again for the same Job it
// returns the version already registered instead of a second one.
func RegisterDownload(ctx context.Context, c client.Client, reg *Registry, d *DownloadJob) (Version, error) {
	if d == nil {
		return Version{}, errors.New("market: DownloadJob is nil")
	}
	if c == nil || isNilValue(c) {
		return Version{}, errors.New("market: RegisterDownload needs a client")
	}
	if err := reg.usable(); err != nil {
		return Version{}, err
	}
	want, err := d.Build()
	if err != nil {
		return Version{}, err
	}
	ns := podspec.Of(&d.Handle).NamespaceName()
	job, message, err := jobSummary(ctx, c, ns, podspec.Of(&d.Handle).Name(), "download")
	if err != nil {
		return Version{}, err
	}
	summary, err := ParseDownloadSummary(message)
	if err != nil {
		return Version{}, fmt.Errorf("job %s/%s: %w", ns, podspec.Of(&d.Handle).Name(), err)
	}
	base := d.source
	if rev := want.Annotations[AnnotationRevision]; rev != "" {
		base, _, _ = strings.Cut(base, "@")
		base += "@" + rev
	}
	v := Version{
		Model: d.model,
		Artifact: Artifact{
			URI: d.Target(), Format: d.format, DType: d.dtype,
			SizeBytes: summary.Bytes, Checksum: summary.Checksum,
		},
		Lineage:     Lineage{BaseModel: base},
		Description: "downloaded from " + base + " by Job " + job.Name,
	}
	existing, err := reg.Versions(ctx, d.model)
	if err != nil {
		return Version{}, err
	}
	for _, e := range existing {
		if e.Artifact == v.Artifact {
			return e, nil
		}
	}
	return reg.Register(ctx, v)
}

var _ cube.Workload = (*DownloadJob)(nil)
