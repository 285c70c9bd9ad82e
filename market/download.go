package market

import (
	"errors"
	"math"
	"net/url"
	"path"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/modelsource"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/models"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/retry"
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
// sync skips complete files), and the Job retries the pod (Retry,
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

	uri           string
	revision      string
	claim, into   string
	model         string
	format        string
	dtype         models.DType
	include       []string
	exclude       []string
	retries       int32
	source        modelsource.Settings
	hfTransfer    bool
	problems      field.ErrorList
	maxWorkers    int
	skipChecksums bool
}

// Download returns a Job named name that fetches source — hf://org/name,
// modelscope://org/name or s3://bucket/prefix, with @revision for the
// hubs — into claim. Register names the registry model it becomes
// (default: name).
func Download(name, source, claim string) *DownloadJob {
	d := &DownloadJob{uri: source, claim: claim, model: name, format: "safetensors", retries: 4}
	podspec.Of(&d.Handle).Init(d, "modeldownload", name)
	return d
}

func (d *DownloadJob) fail(err *field.Error) {
	if err != nil {
		d.problems = append(d.problems, err)
	}
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

// Retry sets how many failed pods the Job replaces (r.Limit, the Job's
// backoffLimit; default 4), each resuming where the last stopped. The Job
// controller waits between pods on its own schedule (10 seconds, doubling,
// at most six minutes: the Job documentation's pod backoff failure
// policy), so Backoff, Factor and MaxBackoff are refused, and so
// is MaxDuration: the Job's only deadline, activeDeadlineSeconds, would
// also stop a download that is still running.
func (d *DownloadJob) Retry(r retry.Policy) *DownloadJob {
	if d == nil {
		return nil
	}
	limit, errs := jobRetry(field.NewPath("spec", "retry"), r)
	d.problems = append(d.problems, errs...)
	if len(errs) == 0 {
		d.retries = limit
	}
	return d
}

// jobRetry is the backoffLimit of a Job for r, or the fields of r a Job
// cannot carry.
func jobRetry(p *field.Path, r retry.Policy) (int32, field.ErrorList) {
	var errs field.ErrorList
	for _, pr := range r.Problems() {
		errs = append(errs, field.Invalid(p.Child(pr.Field), pr.Value, pr.Detail))
	}
	if r.Limit > math.MaxInt32 {
		errs = append(errs, field.Invalid(p.Child("limit"), r.Limit, "must be at most 2147483647 (the Job's backoffLimit)"))
	}
	const paced = "the Job controller paces the pods it replaces itself (10s, doubling, at most 6m): leave it zero"
	if r.Backoff != 0 {
		errs = append(errs, field.Forbidden(p.Child("backoff"), paced))
	}
	if r.Factor != 0 {
		errs = append(errs, field.Forbidden(p.Child("factor"), paced))
	}
	if r.MaxBackoff != 0 {
		errs = append(errs, field.Forbidden(p.Child("maxBackoff"), paced))
	}
	if r.MaxDuration != 0 {
		errs = append(errs, field.Forbidden(p.Child("maxDuration"), "a Job's only deadline (activeDeadlineSeconds) would also stop a running pod: leave it zero"))
	}
	if len(errs) > 0 {
		return 0, errs
	}
	return int32(r.Limit), nil
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

// HFToken reads the Hugging Face token (HF_TOKEN, which huggingface_hub
// reads in utils/_auth.py) from a Secret's key, never a literal.
func (d *DownloadJob) HFToken(ref pod.SecretKeyRef) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.HFToken(field.NewPath("spec"), ref)
	return d
}

// HFEndpoint fetches from a Hugging Face mirror (HF_ENDPOINT, read by
// huggingface_hub/constants.py), such as https://hf-mirror.com: an http(s)
// URL without credentials, query or fragment.
func (d *DownloadJob) HFEndpoint(url string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.HFEndpoint(field.NewPath("spec"), url)
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

// ModelScopeToken reads the ModelScope access token from a Secret's key
// (MODELSCOPE_API_TOKEN); the pod logs in with `modelscope login --token`
// before downloading.
func (d *DownloadJob) ModelScopeToken(ref pod.SecretKeyRef) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.ModelScopeToken(field.NewPath("spec"), ref)
	return d
}

// ModelScopeEndpoint fetches from another ModelScope site, given as
// https://host (https://www.modelscope.ai): modelscope reads the host from
// MODELSCOPE_DOMAIN (modelscope/hub/constants.py) and always uses https.
func (d *DownloadJob) ModelScopeEndpoint(url string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.ModelScopeEndpoint(field.NewPath("spec"), url)
	return d
}

// S3Credentials reads the access key pair from Secret keys into
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, which the AWS CLI reads
// from the environment (awscli/botocore/credentials.py); without it the
// AWS CLI uses the pod's identity.
func (d *DownloadJob) S3Credentials(accessKeyID, secretAccessKey pod.SecretKeyRef) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.S3Credentials(field.NewPath("spec"), accessKeyID, secretAccessKey)
	return d
}

// S3Endpoint points the download at an S3-compatible store (MinIO, Ceph)
// through AWS_ENDPOINT_URL.
func (d *DownloadJob) S3Endpoint(url string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.S3Endpoint(field.NewPath("spec"), url)
	return d
}

// S3Region sets AWS_DEFAULT_REGION: lowercase letters, digits and '-'
// (us-east-1, cn-north-1), as AWS and S3-compatible stores name regions.
func (d *DownloadJob) S3Region(region string) *DownloadJob {
	if d == nil {
		return nil
	}
	d.source.S3Region(field.NewPath("spec"), region)
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

// target is the artifact URI of the downloaded model: pvc://<claim>/<dir>.
// Build writes it to the Job (AnnotationTarget) and RegisterDownload
// registers it.
func (d *DownloadJob) target() string {
	return "pvc://" + d.claim + "/" + d.dir()
}

func (d *DownloadJob) dir() string {
	if d.into != "" {
		return strings.Trim(path.Clean("/"+d.into), "/")
	}
	_, rest, _ := strings.Cut(d.uri, "://")
	rest, _, _ = strings.Cut(rest, "@")
	return strings.Trim(path.Clean("/"+rest), "/")
}

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
	errs = append(errs, d.source.Problems()...)
	src, srcErrs := parseDownloadSource(field.NewPath("spec", "source"), d.uri)
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
	case len(srcErrs) == 0 && len(validation.IsDNS1123Subdomain(d.claim)) == 0 && len(validateURI(field.NewPath("spec", "into"), d.target())) > 0:
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
	meta.Annotations[AnnotationSource] = d.uri
	if rev != "" {
		meta.Annotations[AnnotationRevision] = rev
	}
	meta.Annotations[AnnotationTarget] = d.target()
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

var _ cube.Workload = (*DownloadJob)(nil)
