package market

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/modelsource"
	"github.com/cubestudio/cube/internal/timebound"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/models"
)

// Stage is where a version stands in its life: none, staging, production
// or archived.
type Stage string

// The stages of a version.
const (
	StageNone       Stage = "none"
	StageStaging    Stage = "staging"
	StageProduction Stage = "production"
	StageArchived   Stage = "archived"
)

// Stages lists every stage in order.
var stages = []Stage{StageNone, StageStaging, StageProduction, StageArchived}

// Valid reports whether s is one of the four stages.
func (s Stage) Valid() bool { return slices.Contains(stages, s) }

// The artifact schemes a version may point at: a path on a claim, an S3
// prefix, a Hugging Face or ModelScope repository (with @revision).
const (
	SchemePVC        = "pvc"
	SchemeS3         = "s3"
	SchemeHF         = "hf"
	SchemeModelScope = "modelscope"
)

var schemes = []string{SchemePVC, SchemeS3, SchemeHF, SchemeModelScope}

// Artifact says where a version's weights are and what they are.
type Artifact struct {
	// URI is pvc://claim/path, s3://bucket/prefix, hf://org/name[@revision]
	// or modelscope://org/name[@revision].
	URI string `json:"uri"`
	// Format is how the weights are stored: safetensors, gguf, pytorch,
	// onnx, or lora for an adapter that needs its base model.
	Format string `json:"format,omitempty"`
	// DType is the precision of the stored weights.
	DType models.DType `json:"dtype,omitempty"`
	// SizeBytes is the total size of the files.
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Checksum is "sha256:<hex>" over the files (see Download for how a
	// download computes it).
	Checksum string `json:"checksum,omitempty"`
}

// Scheme returns the part of URI before "://", or "" when there is none.
func (a Artifact) Scheme() string {
	scheme, _, ok := strings.Cut(a.URI, "://")
	if !ok {
		return ""
	}
	return scheme
}

// Lineage records where a version came from.
type Lineage struct {
	// BaseModel is the model it was tuned from: a Hugging Face id, or a
	// registry reference ("support-bot@3").
	BaseModel string `json:"baseModel,omitempty"`
	// Datasets are the datasets it was trained on (URIs or names).
	Datasets []string `json:"datasets,omitempty"`
	// TrainingRelease is the cube release that trained it.
	TrainingRelease string `json:"trainingRelease,omitempty"`
	// TrainingJob is the kind and name of the job, "PyTorchJob/sft-7b".
	TrainingJob string `json:"trainingJob,omitempty"`
	// Hyperparameters are the run's settings as given to the trainer.
	Hyperparameters map[string]string `json:"hyperparameters,omitempty"`
}

func (l Lineage) clone() Lineage {
	l.Datasets = slices.Clone(l.Datasets)
	l.Hyperparameters = maps.Clone(l.Hyperparameters)
	return l
}

func (l Lineage) equal(o Lineage) bool {
	return l.BaseModel == o.BaseModel && slices.Equal(l.Datasets, o.Datasets) &&
		l.TrainingRelease == o.TrainingRelease && l.TrainingJob == o.TrainingJob &&
		maps.Equal(l.Hyperparameters, o.Hyperparameters)
}

// StageChange is one entry in a version's stage history.
type StageChange struct {
	From   Stage     `json:"from"`
	To     Stage     `json:"to"`
	At     time.Time `json:"at"`
	By     string    `json:"by,omitempty"`
	Reason string    `json:"reason,omitempty"`
}

// Version is one registered version of a team's model. Model, Number,
// Artifact, Lineage, Description and Created never change once it is
// registered; Metrics, Tags, Stage and History do, through Registry
// methods that compare and swap on Revision.
type Version struct {
	// Model is the model's name, a DNS-1123 label of at most MaxModelName
	// characters because it names Kubernetes objects.
	Model string `json:"model"`
	// Number is 1 for the first version of a model and grows by one; the
	// registry assigns it.
	Number      int       `json:"number"`
	Artifact    Artifact  `json:"artifact"`
	Lineage     Lineage   `json:"lineage"`
	Description string    `json:"description,omitempty"`
	Created     time.Time `json:"created"`

	// Metrics are evaluation results by name ("mmlu/acc").
	Metrics map[string]float64 `json:"metrics,omitempty"`
	// Tags are free labels, each a valid Kubernetes label name part.
	Tags    []string      `json:"tags,omitempty"`
	Stage   Stage         `json:"stage"`
	History []StageChange `json:"history,omitempty"`

	// Revision changes on every write; an update carrying an old one fails
	// with ErrConflict. Stores set it; callers pass back what they read.
	Revision string `json:"-"`
}

// Ref returns "model@number".
func (v Version) Ref() string { return v.Model + "@" + strconv.Itoa(v.Number) }

// Clone returns a deep copy of v.
func (v Version) Clone() Version {
	v.Lineage = v.Lineage.clone()
	v.Metrics = maps.Clone(v.Metrics)
	v.Tags = slices.Clone(v.Tags)
	v.History = slices.Clone(v.History)
	return v
}

// HasTag reports whether v carries tag.
func (v Version) HasTag(tag string) bool { return slices.Contains(v.Tags, tag) }

// MaxModelName is the longest model name: the Kubernetes store names a
// ConfigMap "<model>-v<number>" and labels it with the model, and both
// must fit in 63 characters with room for the number.
const MaxModelName = 52

// ValidateModelName checks a model name.
func ValidateModelName(p *field.Path, name string) field.ErrorList {
	var errs field.ErrorList
	switch {
	case name == "":
		errs = append(errs, field.Required(p, "a model name is required"))
	case len(name) > MaxModelName:
		errs = append(errs, field.TooLong(p, name, MaxModelName))
	default:
		for _, msg := range validation.IsDNS1123Label(name) {
			errs = append(errs, field.Invalid(p, name, msg))
		}
	}
	return errs
}

// validateTag checks one tag: tags become label keys in the Kubernetes
// store, so each must be a label name part (63 characters, alphanumerics,
// '-', '_', '.').
func validateTag(p *field.Path, tag string) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(tag) {
		errs = append(errs, field.Invalid(p, tag, msg))
	}
	if strings.Contains(tag, "/") {
		errs = append(errs, field.Invalid(p, tag, "must not contain '/'"))
	}
	return errs
}

// Validate reports every problem of a version about to be registered or
// written, with field paths.
func (v Version) Validate() error {
	var errs field.ErrorList
	errs = append(errs, ValidateModelName(field.NewPath("model"), v.Model)...)
	if v.Number < 0 {
		errs = append(errs, field.Invalid(field.NewPath("number"), v.Number, "must not be negative"))
	}
	errs = append(errs, v.Artifact.validate(field.NewPath("artifact"))...)
	if urlcheck.HasUserinfo(v.Lineage.BaseModel) {
		errs = append(errs, field.Forbidden(field.NewPath("lineage", "baseModel"), credentialsMessage))
	}
	for i, d := range v.Lineage.Datasets {
		switch {
		case strings.TrimSpace(d) == "":
			errs = append(errs, field.Required(field.NewPath("lineage", "datasets").Index(i), "a dataset must not be empty"))
		case urlcheck.HasUserinfo(d):
			errs = append(errs, field.Forbidden(field.NewPath("lineage", "datasets").Index(i), credentialsMessage))
		}
	}
	for _, k := range sortedKeys(v.Lineage.Hyperparameters) {
		if k == "" {
			errs = append(errs, field.Invalid(field.NewPath("lineage", "hyperparameters").Key(k), k, "a name must not be empty"))
		}
	}
	for _, k := range sortedKeys(v.Metrics) {
		errs = append(errs, validateMetric(field.NewPath("metrics").Key(k), k, v.Metrics[k])...)
	}
	seen := map[string]bool{}
	for i, t := range v.Tags {
		p := field.NewPath("tags").Index(i)
		errs = append(errs, validateTag(p, t)...)
		if seen[t] {
			errs = append(errs, field.Duplicate(p, t))
		}
		seen[t] = true
	}
	if v.Stage != "" && !v.Stage.Valid() {
		errs = append(errs, field.NotSupported(field.NewPath("stage"), v.Stage, stages))
	}
	for i, h := range v.History {
		p := field.NewPath("history").Index(i)
		if !h.From.Valid() {
			errs = append(errs, field.NotSupported(p.Child("from"), h.From, stages))
		}
		if !h.To.Valid() {
			errs = append(errs, field.NotSupported(p.Child("to"), h.To, stages))
		}
	}
	return errs.ToAggregate()
}

func validateMetric(p *field.Path, name string, value float64) field.ErrorList {
	var errs field.ErrorList
	if strings.TrimSpace(name) == "" {
		errs = append(errs, field.Invalid(p, name, "a metric name must not be empty"))
	}
	if value != value || value > maxFloat || value < -maxFloat { // NaN and ±Inf do not survive JSON
		errs = append(errs, field.Invalid(p, value, "must be a finite number"))
	}
	return errs
}

const maxFloat = 1.7976931348623157e308

func (a Artifact) validate(p *field.Path) field.ErrorList {
	errs := validateURI(p.Child("uri"), a.URI)
	if a.Format != "" && !slices.Contains(formats, a.Format) {
		errs = append(errs, field.NotSupported(p.Child("format"), a.Format, formats))
	}
	if a.DType != "" && !a.DType.Valid() {
		errs = append(errs, field.NotSupported(p.Child("dtype"), a.DType, []models.DType{models.FP32, models.BF16, models.FP16, models.FP8, models.INT8, models.INT4}))
	}
	if a.SizeBytes < 0 {
		errs = append(errs, field.Invalid(p.Child("sizeBytes"), a.SizeBytes, "must not be negative"))
	}
	if a.Checksum != "" && !validChecksum(a.Checksum) {
		errs = append(errs, field.Invalid(p.Child("checksum"), a.Checksum, checksumMessage))
	}
	return errs
}

// formats are the artifact formats Artifact.Format documents; one spelt
// otherwise ("LoRA") would be taken for full weights where FormatLoRA is
// compared.
var formats = []string{"safetensors", "gguf", "pytorch", "onnx", FormatLoRA}

const checksumMessage = "must be sha256: and 64 lowercase hex digits"

func validChecksum(s string) bool {
	hex, ok := strings.CutPrefix(s, "sha256:")
	return ok && len(hex) == 64 && strings.Trim(hex, "0123456789abcdef") == ""
}

// isHubRepo reports whether repo is org/name with both parts present.
func isHubRepo(repo string) bool {
	org, name, ok := strings.Cut(repo, "/")
	return ok && org != "" && name != "" && !strings.Contains(name, "/")
}

// validateURI checks an artifact URI.
func validateURI(uri *field.Path, value string) field.ErrorList {
	var errs field.ErrorList
	scheme, rest, ok := strings.Cut(value, "://")
	switch {
	case value == "":
		errs = append(errs, field.Required(uri, "where the weights are: pvc://, s3://, hf:// or modelscope://"))
	case !ok:
		errs = append(errs, field.Invalid(uri, value, "must be scheme://location"))
	case !slices.Contains(schemes, scheme):
		errs = append(errs, field.NotSupported(uri, scheme, schemes))
	case rest == "" || strings.HasPrefix(rest, "/"):
		errs = append(errs, field.Invalid(uri, value, "has no location after the scheme"))
	case urlcheck.HasUserinfo(value):
		errs = append(errs, field.Forbidden(uri, credentialsMessage))
	case strings.ContainsAny(rest, " \t\n\"'`$\\"):
		errs = append(errs, field.Invalid(uri, value, "must not contain spaces, quotes, '$' or '\\'"))
	case scheme == SchemeHF || scheme == SchemeModelScope:
		// The same repository and revision rules as serving (serve's
		// ParseSource): what the registry holds, serve can load.
		repo, rev, hasRev := strings.Cut(rest, "@")
		if detail := modelsource.CheckRepo(repo); detail != "" {
			if !isHubRepo(repo) {
				detail = "a hub repository is org/name"
			}
			errs = append(errs, field.Invalid(uri, value, detail))
		} else if hasRev && scheme == SchemeHF {
			if detail := modelsource.CheckRevision(rev); detail != "" {
				errs = append(errs, field.Invalid(uri, value, detail))
			}
		}
	default:
		first, sub, _ := strings.Cut(rest, "/")
		if _, detail := modelsource.CleanSubPath(sub); hasDotSegment(sub) {
			errs = append(errs, field.Invalid(uri, value, "must not contain '.' or '..' path segments: a path that climbs out of where it points"))
		} else if detail != "" {
			errs = append(errs, field.Invalid(uri, value, detail))
		}
		switch scheme {
		case SchemePVC:
			for _, msg := range validation.IsDNS1123Subdomain(first) {
				errs = append(errs, field.Invalid(uri, value, "claim: "+msg))
			}
		case SchemeS3:
			if detail := modelsource.CheckBucket(first); detail != "" {
				errs = append(errs, field.Invalid(uri, value, detail))
			}
		}
	}
	return errs
}

// credentialsMessage refuses a URL with user:password@. The value is never
// repeated in the error: it would carry the secret into logs.
const credentialsMessage = "must not carry credentials (user:password@ before the host): keep them in a Secret"

// hasDotSegment reports whether a slash-separated path has a "." or ".."
// segment.
func hasDotSegment(p string) bool {
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return true
		}
	}
	return false
}

// maxClockSkew is how far in the future a time the caller gives may lie:
// clocks of the machines writing to one registry differ a little.
const maxClockSkew = 5 * time.Minute

// validateTimes checks the times a version carries against now: none in
// the future (a version created in year 9999 would stay the newest of its
// stage for ever), none before 1970, stage changes in order.
func (v Version) validateTimes(now time.Time) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, at time.Time) {
		switch {
		case at.IsZero():
			errs = append(errs, field.Required(p, "when it happened"))
		case at.Before(timebound.Earliest): // anything before is a zero value gone wrong
			errs = append(errs, field.Invalid(p, at, "must not be before 1970"))
		case at.After(now.Add(maxClockSkew)):
			errs = append(errs, field.Invalid(p, at, "must not be in the future"))
		}
	}
	check(field.NewPath("created"), v.Created)
	for i, h := range v.History {
		p := field.NewPath("history").Index(i).Child("at")
		check(p, h.At)
		if i > 0 && h.At.Before(v.History[i-1].At) {
			errs = append(errs, field.Invalid(p, h.At, "stage changes are in the order they happened"))
		}
	}
	return errs
}

// checkImmutable reports what an update changed that a registered version
// never changes.
func checkImmutable(stored, updated Version) error {
	var errs field.ErrorList
	if stored.Artifact != updated.Artifact {
		errs = append(errs, field.Forbidden(field.NewPath("artifact"), "a registered version's artifact never changes: register a new version"))
	}
	if !stored.Lineage.equal(updated.Lineage) {
		errs = append(errs, field.Forbidden(field.NewPath("lineage"), "a registered version's lineage never changes"))
	}
	if stored.Description != updated.Description {
		errs = append(errs, field.Forbidden(field.NewPath("description"), "a registered version's description never changes"))
	}
	if !stored.Created.Equal(updated.Created) {
		errs = append(errs, field.Forbidden(field.NewPath("created"), "never changes"))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("update %s: %w: %w", stored.Ref(), ErrImmutable, errs.ToAggregate())
}

// Errors a registry returns (wrapped); test with errors.Is.
var (
	// ErrNotFound: no such model or version.
	ErrNotFound = errors.New("not found")
	// ErrConflict: another writer changed the version since it was read.
	ErrConflict = errors.New("conflict: the version changed since it was read; read it again and retry")
	// ErrImmutable: an update tried to change what a version never changes.
	ErrImmutable = errors.New("registered versions are immutable")
	// ErrTooLarge: a version does not fit the store's object size limit.
	ErrTooLarge = errors.New("version too large for the store")
)

// Reference names a version: "model" or "model@latest" for the newest,
// "model@3" for a number, "model@production" (or any stage) for the newest
// version in that stage.
type Reference struct {
	Model string
	// Number is set for model@<number>; 0 otherwise.
	Number int
	// Stage is set for model@<stage>.
	Stage Stage
}

// String returns the reference in the form ParseReference reads.
func (r Reference) String() string {
	switch {
	case r.Number > 0:
		return r.Model + "@" + strconv.Itoa(r.Number)
	case r.Stage != "":
		return r.Model + "@" + string(r.Stage)
	}
	return r.Model
}

// ParseReference reads "model", "model@latest", "model@<number>" or
// "model@<stage>".
func ParseReference(s string) (Reference, error) {
	name, sel, hasSel := strings.Cut(s, "@")
	var errs field.ErrorList
	errs = append(errs, ValidateModelName(field.NewPath("model"), name)...)
	r := Reference{Model: name}
	switch {
	case !hasSel || sel == "latest":
	case sel == "":
		errs = append(errs, field.Required(field.NewPath("selector"), "after '@' comes a number, latest or a stage"))
	case sel[0] >= '0' && sel[0] <= '9':
		n, err := strconv.Atoi(sel)
		if err != nil || n < 1 || strconv.Itoa(n) != sel {
			errs = append(errs, field.Invalid(field.NewPath("selector"), sel, "a version number is a positive integer without leading zeros"))
		}
		r.Number = n
	case Stage(sel).Valid():
		r.Stage = Stage(sel)
	default:
		errs = append(errs, field.NotSupported(field.NewPath("selector"), sel, []string{"<number>", "latest", "none", "staging", "production", "archived"}))
	}
	if len(errs) > 0 {
		return Reference{}, fmt.Errorf("parse reference %q: %w", s, errs.ToAggregate())
	}
	return r, nil
}
