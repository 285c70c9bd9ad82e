package serve

import (
	"fmt"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/modelsource"
)

// SourceKind says where a model's weights come from.
type SourceKind string

// The model sources a served model (or a LoRA adapter) can name.
const (
	// SourceHuggingFace is a Hugging Face Hub repository: hf://org/model,
	// hf://org/model@revision, or a bare org/model.
	SourceHuggingFace SourceKind = "hf"
	// SourceModelScope is a ModelScope repository: modelscope://org/model.
	SourceModelScope SourceKind = "modelscope"
	// SourcePVC is a directory on a PersistentVolumeClaim:
	// pvc://claim/path/to/model (the path may be empty for the claim's root).
	SourcePVC SourceKind = "pvc"
	// SourceS3 is an S3 (or S3-compatible) prefix: s3://bucket/prefix. An
	// init container downloads it before the engine starts.
	SourceS3 SourceKind = "s3"
	// SourceOllama is a model of the Ollama library: ollama://qwen2.5:7b,
	// or a bare name:tag given to serve.Ollama.
	SourceOllama SourceKind = "ollama"
)

// Source is a parsed model reference. ParseSource makes one; String turns it
// back into the canonical URI.
type Source struct {
	Kind SourceKind
	// Repo is the repository id (org/model) for Hugging Face and ModelScope,
	// and the model name (name:tag, optionally namespace/name:tag) for Ollama.
	Repo string
	// Revision is the Hugging Face branch, tag or commit after "@".
	Revision string
	// Claim and Path locate a PVC source; Path has no leading slash.
	Claim, Path string
	// Bucket and Prefix locate an S3 source; Prefix has no leading slash.
	Bucket, Prefix string
}

// String returns the canonical URI of s (hf://org/model@rev, pvc://claim/path…).
func (s Source) String() string {
	switch s.Kind {
	case SourceHuggingFace:
		out := "hf://" + s.Repo
		if s.Revision != "" {
			out += "@" + s.Revision
		}
		return out
	case SourceModelScope:
		return "modelscope://" + s.Repo
	case SourceOllama:
		return "ollama://" + s.Repo
	case SourcePVC:
		return joinURI("pvc://", s.Claim, s.Path)
	case SourceS3:
		return joinURI("s3://", s.Bucket, s.Prefix)
	}
	return ""
}

func joinURI(scheme, first, rest string) string {
	if rest == "" {
		return scheme + first
	}
	return scheme + first + "/" + rest
}

// ParseSource parses a model reference: hf://org/model[@revision],
// modelscope://org/model, pvc://claim[/path], s3://bucket[/prefix],
// ollama://name[:tag], or a bare Hugging Face id org/model. A bad reference
// is an error naming the field ("model") and saying what is wrong.
func ParseSource(uri string) (Source, error) {
	src, errs := parseSource(uri, field.NewPath("model"), SourceHuggingFace)
	return src, errs.ToAggregate()
}

// parseSource parses uri, reporting problems under p. A reference without a
// scheme is of kind bare (Hugging Face for most engines, Ollama for Ollama).
func parseSource(uri string, p *field.Path, bare SourceKind) (Source, field.ErrorList) {
	bad := func(detail string) (Source, field.ErrorList) {
		return Source{}, field.ErrorList{field.Invalid(p, uri, detail)}
	}
	if uri == "" {
		return Source{}, field.ErrorList{field.Required(p, "a model is required (hf://org/model, pvc://claim/path, s3://bucket/prefix, modelscope://org/model)")}
	}
	if strings.IndexFunc(uri, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0 {
		return bad("must not contain whitespace or control characters")
	}
	if len(uri) > 2048 {
		return bad("must be at most 2048 characters")
	}
	kind, rest, hasScheme := strings.Cut(uri, "://")
	if !hasScheme {
		if strings.Contains(uri, ":/") {
			return bad("malformed scheme: write scheme://…")
		}
		kind, rest = string(bare), uri
	}
	var src Source
	var detail string
	switch SourceKind(kind) {
	case SourceHuggingFace:
		repo, rev, hasRev := strings.Cut(rest, "@")
		if hasRev {
			if detail = modelsource.CheckRevision(rev); detail != "" {
				return bad(detail)
			}
		}
		src, detail = Source{Kind: SourceHuggingFace, Repo: repo, Revision: rev}, modelsource.CheckRepo(repo)
	case SourceModelScope:
		src, detail = Source{Kind: SourceModelScope, Repo: rest}, modelsource.CheckRepo(rest)
	case SourceOllama:
		src, detail = Source{Kind: SourceOllama, Repo: rest}, checkOllamaName(rest)
	case SourcePVC:
		claim, sub, _ := strings.Cut(rest, "/")
		src = Source{Kind: SourcePVC, Claim: claim}
		if msgs := validation.IsDNS1123Subdomain(claim); len(msgs) > 0 {
			return bad(fmt.Sprintf("claim %q: %s", claim, strings.Join(msgs, "; ")))
		}
		src.Path, detail = modelsource.CleanSubPath(sub)
	case SourceS3:
		bucket, prefix, _ := strings.Cut(rest, "/")
		src = Source{Kind: SourceS3, Bucket: bucket}
		if detail = modelsource.CheckBucket(bucket); detail != "" {
			return bad(detail)
		}
		src.Prefix, detail = modelsource.CleanSubPath(prefix)
	default:
		return bad(fmt.Sprintf("unknown scheme %q: use hf, modelscope, pvc, s3 or ollama", kind))
	}
	if detail != "" {
		return bad(detail)
	}
	return src, nil
}

// checkOllamaName accepts [namespace/]name[:tag] as the Ollama library, and
// hf.co/… or modelscope.cn/… hosts, spell them.
func checkOllamaName(name string) string {
	switch {
	case name == "":
		return "an Ollama model name is required, such as qwen2.5:7b"
	case len(name) > 256:
		return "must be at most 256 characters"
	case strings.IndexFunc(name, func(r rune) bool { return !modelsource.IsRepoChar(r) && r != '/' && r != ':' }) >= 0:
		return fmt.Sprintf("%q may only hold letters, digits, '-', '_', '.', '/' and ':'", name)
	case strings.Count(name, ":") > 1:
		return fmt.Sprintf("%q has more than one ':' tag separator", name)
	case strings.HasPrefix(name, ":") || strings.HasSuffix(name, ":") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.Contains(name, "//") || strings.Contains(name, ".."):
		return fmt.Sprintf("%q is not a model name such as qwen2.5:7b", name)
	}
	return ""
}
