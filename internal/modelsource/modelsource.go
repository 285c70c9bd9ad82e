package modelsource

import (
	"fmt"
	neturl "net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/pod"
)

// SecretKeyRef is the one secret reference of the module.
type SecretKeyRef = pod.SecretKeyRef

// Kind is the scheme of a source: hf, modelscope, pvc, s3, ollama.
type Kind string

// The sources whose settings live here.
const (
	HuggingFace Kind = "hf"
	ModelScope  Kind = "modelscope"
	S3          Kind = "s3"
)

// Settings are the credentials and endpoints of the hubs and S3. A
// builder keeps one, calls its setters from its own setting methods with
// its spec path, and reads Problems, Unused and Env when it renders.
// The zero value has nothing set.
type Settings struct {
	hfToken, msToken                 *SecretKeyRef
	s3AccessKeyID, s3SecretAccessKey *SecretKeyRef
	hfEndpoint, msEndpoint           string
	s3Endpoint, s3Region             string
	problems                         field.ErrorList
}

// Problems returns what the setters refused, in the order they were called.
func (s *Settings) Problems() field.ErrorList {
	return append(field.ErrorList(nil), s.problems...)
}

func (s *Settings) secret(p *field.Path, ref SecretKeyRef) *SecretKeyRef {
	if ref.Name == "" || ref.Key == "" {
		s.problems = append(s.problems, field.Required(p, "secret name and key are required"))
	} else {
		s.problems = append(s.problems, podspec.ValidateSecretKey(p, ref.Name, ref.Key)...)
	}
	return &ref
}

// HFToken reads the Hugging Face token into HF_TOKEN from a Secret's key,
// recorded under spec.hfToken.
func (s *Settings) HFToken(spec *field.Path, ref SecretKeyRef) {
	s.hfToken = s.secret(spec.Child("hfToken"), ref)
}

// HFEndpoint is a Hugging Face mirror (HF_ENDPOINT), under spec.hfEndpoint.
func (s *Settings) HFEndpoint(spec *field.Path, url string) {
	if err := CheckServerURL(spec.Child("hfEndpoint"), url, "give the hub token with HFToken"); err != nil {
		s.problems = append(s.problems, err)
	}
	s.hfEndpoint = url
}

// ModelScopeToken reads the ModelScope access token into
// MODELSCOPE_API_TOKEN, under spec.modelScopeToken.
func (s *Settings) ModelScopeToken(spec *field.Path, ref SecretKeyRef) {
	s.msToken = s.secret(spec.Child("modelScopeToken"), ref)
}

// ModelScopeEndpoint is another ModelScope site, an https URL such as
// https://www.modelscope.ai: modelscope reads only its host
// (MODELSCOPE_DOMAIN) and puts https:// before it (hub/constants.py
// MODELSCOPE_URL_SCHEME), so a path or another scheme is refused rather
// than dropped.
func (s *Settings) ModelScopeEndpoint(spec *field.Path, url string) {
	p := spec.Child("modelScopeEndpoint")
	if err := CheckServerURL(p, url, "give the token with ModelScopeToken"); err != nil {
		s.problems = append(s.problems, err)
	} else if u, _ := neturl.Parse(url); u.Scheme != "https" || strings.Trim(u.Path, "/") != "" {
		s.problems = append(s.problems, field.Invalid(p, url, "must be https://host: ModelScope reads the host alone and always uses https"))
	}
	s.msEndpoint = url
}

// S3Credentials reads the access key pair into AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, under spec.s3Credentials.
func (s *Settings) S3Credentials(spec *field.Path, accessKeyID, secretAccessKey SecretKeyRef) {
	p := spec.Child("s3Credentials")
	s.s3AccessKeyID = s.secret(p.Child("accessKeyID"), accessKeyID)
	s.s3SecretAccessKey = s.secret(p.Child("secretAccessKey"), secretAccessKey)
}

// S3Endpoint is an S3-compatible store (MinIO, Ceph, OSS) instead of AWS
// (AWS_ENDPOINT_URL), under spec.s3Endpoint.
func (s *Settings) S3Endpoint(spec *field.Path, url string) {
	if err := CheckServerURL(spec.Child("s3Endpoint"), url, "give the keys with S3Credentials"); err != nil {
		s.problems = append(s.problems, err)
	}
	s.s3Endpoint = url
}

// S3Region is the bucket's region (AWS_DEFAULT_REGION), under spec.s3Region.
func (s *Settings) S3Region(spec *field.Path, region string) {
	if !isRegion(region) {
		s.problems = append(s.problems, field.Invalid(spec.Child("s3Region"), region, "must be a region name such as us-east-1: lowercase letters, digits and '-'"))
	}
	s.s3Region = region
}

// isRegion reports whether r is spelt like an S3 region (us-east-1,
// cn-north-1, a MinIO or Ceph zone name): an empty one would render no
// AWS_DEFAULT_REGION and leave the call without effect.
func isRegion(r string) bool {
	if r == "" || len(r) > 63 || r[0] == '-' {
		return false
	}
	return strings.Trim(r, "abcdefghijklmnopqrstuvwxyz0123456789-") == ""
}

// set lists, per source, the settings used, by field name.
func (s *Settings) set() map[Kind][]string {
	out := map[Kind][]string{}
	add := func(k Kind, name string, on bool) {
		if on {
			out[k] = append(out[k], name)
		}
	}
	add(HuggingFace, "hfToken", s.hfToken != nil)
	add(HuggingFace, "hfEndpoint", s.hfEndpoint != "")
	add(ModelScope, "modelScopeToken", s.msToken != nil)
	add(ModelScope, "modelScopeEndpoint", s.msEndpoint != "")
	add(S3, "s3Credentials", s.s3AccessKeyID != nil)
	add(S3, "s3Endpoint", s.s3Endpoint != "")
	add(S3, "s3Region", s.s3Region != "")
	return out
}

// Unused reports, under spec, every setting of a source that none of used
// is: a token for a hub the model does not come from would be dropped
// without a word. source names the model's source in the message.
func (s *Settings) Unused(spec *field.Path, source Kind, used ...Kind) field.ErrorList {
	var errs field.ErrorList
	for _, k := range []Kind{HuggingFace, ModelScope, S3} {
		if containsKind(used, k) {
			continue
		}
		for _, name := range s.set()[k] {
			errs = append(errs, field.Forbidden(spec.Child(name), fmt.Sprintf("applies to %s:// sources, not %s://", k, source)))
		}
	}
	return errs
}

func containsKind(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

// Env returns the environment the downloader of source k reads: the
// tokens as secretKeyRefs (never their values), the endpoints and region
// in clear. Nothing for a kind without settings.
func (s *Settings) Env(k Kind) []corev1.EnvVar {
	var env []corev1.EnvVar
	add := func(name, value string) {
		if value != "" {
			env = append(env, corev1.EnvVar{Name: name, Value: value})
		}
	}
	ref := func(name string, r *SecretKeyRef) {
		if r != nil {
			env = append(env, SecretEnv(name, *r))
		}
	}
	switch k {
	case HuggingFace:
		ref("HF_TOKEN", s.hfToken)
		add("HF_ENDPOINT", s.hfEndpoint)
	case ModelScope:
		ref("MODELSCOPE_API_TOKEN", s.msToken)
		if u, err := neturl.Parse(s.msEndpoint); err == nil && s.msEndpoint != "" {
			add("MODELSCOPE_DOMAIN", u.Host)
		}
	case S3:
		ref("AWS_ACCESS_KEY_ID", s.s3AccessKeyID)
		ref("AWS_SECRET_ACCESS_KEY", s.s3SecretAccessKey)
		add("AWS_ENDPOINT_URL", s.s3Endpoint)
		add("AWS_DEFAULT_REGION", s.s3Region)
	}
	return env
}

// SecretEnv is the variable name read from a Secret's key.
func SecretEnv(name string, ref SecretKeyRef) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: ref.Name}, Key: ref.Key,
	}}}
}

// CheckServerURL checks the base URL of a server a pod downloads from,
// rendered into its environment in clear: http or https, a host, no query
// or fragment (the clients append paths to it), and no credentials, which
// would be stored in the objects; credentials says how to give them
// instead. A URL with a user or password is never quoted back.
func CheckServerURL(path *field.Path, raw, credentials string) *field.Error {
	u, err := neturl.Parse(raw)
	switch {
	case err != nil:
		return field.Invalid(path, urlcheck.Redact(raw), "not a URL")
	case u.User != nil:
		return field.Forbidden(path, "must not carry credentials (user or password before @; the value is not shown): they would be stored in the objects in clear; "+credentials)
	case u.Scheme != "http" && u.Scheme != "https":
		return field.Invalid(path, raw, "must be an http(s) URL")
	case u.Hostname() == "":
		return field.Invalid(path, raw, "must name a host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return field.Invalid(path, raw, "must not have a query or fragment: the client appends paths to it")
	}
	return nil
}
