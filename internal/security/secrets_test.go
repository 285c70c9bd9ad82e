package security_test

import (
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube/internal/podspec"
)

// tokenPatterns are the shapes of credentials that are never anything
// else, wherever they appear in an object.
var tokenPatterns = []struct {
	name string
	re   *regexp.Regexp
}{
	{"Hugging Face token", regexp.MustCompile(`\bhf_[A-Za-z0-9]{30,}`)},
	{"OpenAI-style API key", regexp.MustCompile(`\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}`)},
	{"GitHub token", regexp.MustCompile(`\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{40,})`)},
	{"AWS access key id", regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"Slack token", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"GitLab token", regexp.MustCompile(`\bglpat-[A-Za-z0-9_-]{20,}`)},
	{"JWT", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"private key", regexp.MustCompile(`-----BEGIN [A-Z ]*PRIVATE KEY-----`)},
}

// credentialFlag is a command-line option that takes a credential, with
// its value when it is written in the same word (--token=x).
var credentialFlag = regexp.MustCompile(`^--?(?:api[-_]?key|token|hf[-_]token|access[-_]?token|auth[-_]?token|password|passwd|secret|secret[-_]key|access[-_]key)(?:=(.*))?$`)

// credentialFlagInText finds the same options inside a shell script.
var credentialFlagInText = regexp.MustCompile(`(?:^|\s)--?(?:api[-_]?key|token|hf[-_]token|access[-_]?token|auth[-_]?token|password|passwd|secret|secret[-_]key|access[-_]key)(?:=|\s+)("?[^\s"]+)`)

// credentialName marks an env var, a ConfigMap key or a config-file key
// as holding a credential: wider than podspec.SecretLiteral's words on
// purpose (any *KEY*), narrowed below by the suffixes that name a
// location, not a value.
var credentialName = regexp.MustCompile(`(?i)token|key|password|passwd|secret|credential`)

var locationSuffixes = []string{"_FILE", "_PATH", "_DIR", "_NAME", "_URL", "_ENDPOINT", "_REF", "_ID"}

// notCredentialNames are env vars whose names contain a credential word
// but that hold something else, with the reason.
var notCredentialNames = map[string]string{
	// hardware: NCCL's InfiniBand and socket settings, HCCL's.
}

// userInfoURL finds URLs with user information (user:password@ or token@).
var userInfoURL = regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#"'@]+@[^\s"']+`)

// configLine is key: value or key=value in a config file held in a
// ConfigMap or an inline script.
var configLine = regexp.MustCompile(`(?m)(?:^|[{,])[ \t]*"?([A-Za-z0-9_.-]+)"?[ \t]*[:=][ \t]*"?([^\s",}\]]+)`)

// isReference says that a value names a credential without holding it:
// an env or Argo reference, a path, a placeholder.
func isReference(v string) bool {
	v = strings.Trim(v, `"'`)
	switch {
	case v == "", strings.HasPrefix(v, "$"), strings.HasPrefix(v, "{{"), strings.HasPrefix(v, "/"),
		strings.HasPrefix(v, "${"), strings.HasPrefix(v, "<"):
		return true
	}
	return false
}

// notACredential is a value no credential has: a number or a boolean
// (maxInputTokenLen: 8192, tokenTimeout: 60 in MindIE's config).
func notACredential(v string) bool {
	v = strings.Trim(v, `"'`)
	if _, err := strconv.ParseFloat(v, 64); err == nil {
		return true
	}
	_, err := strconv.ParseBool(v)
	return err == nil
}

// finding is one literal credential in an object.
type finding struct {
	path, what string
}

func (f finding) String() string { return f.path + ": " + f.what }

// scanObject returns every literal credential in obj. It never returns
// the value itself, only where it is and what it looks like.
func scanObject(obj *unstructured.Unstructured) []finding {
	var out []finding
	isConfigMap := obj.GetKind() == "ConfigMap" && obj.GroupVersionKind().Group == ""
	var walk func(v any, path string, key string)
	walk = func(v any, path string, key string) {
		switch t := v.(type) {
		case map[string]any:
			// An env var: name and value side by side.
			if name, ok := t["name"].(string); ok {
				if value, ok := t["value"].(string); ok && envLiteral(name, value) {
					out = append(out, finding{path + ".value", "env " + name + " holds a literal"})
				}
			}
			for _, k := range slices.Sorted(maps.Keys(t)) {
				walk(t[k], path+"."+k, k)
			}
		case []any:
			if key == "command" || key == "args" {
				out = append(out, scanArgs(t, path)...)
			}
			for i, c := range t {
				walk(c, path+"["+strconv.Itoa(i)+"]", "")
			}
		case string:
			out = append(out, scanText(t, path)...)
			if isConfigMap && strings.HasPrefix(path, ".data.") {
				if credentialName.MatchString(key) && !isReference(t) && !strings.Contains(t, "\n") {
					out = append(out, finding{path, "ConfigMap key " + key + " holds a literal"})
				}
				for _, m := range configLine.FindAllStringSubmatch(t, -1) {
					if keyLiteral(m[1], m[2]) {
						out = append(out, finding{path, "config key " + m[1] + " holds a literal"})
					}
				}
			}
		}
	}
	walk(obj.Object, "", "")
	return out
}

// envLiteral is a credential-named variable with a literal value.
func envLiteral(name, value string) bool {
	if podspec.SecretLiteral(name, value) {
		return true
	}
	return keyLiteral(name, value)
}

func keyLiteral(name, value string) bool {
	upper := strings.ToUpper(name)
	if !credentialName.MatchString(name) || isReference(value) || notACredential(value) {
		return false
	}
	if _, ok := notCredentialNames[upper]; ok {
		return false
	}
	for _, s := range locationSuffixes {
		if strings.HasSuffix(upper, s) {
			return false
		}
	}
	return true
}

// scanArgs finds credential options followed by a literal in a command
// line given as a list.
func scanArgs(args []any, path string) []finding {
	var out []finding
	for i, a := range args {
		s, ok := a.(string)
		if !ok {
			continue
		}
		m := credentialFlag.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		value := m[1]
		if !strings.Contains(s, "=") {
			if i+1 >= len(args) {
				continue
			}
			value, _ = args[i+1].(string)
		}
		if !isReference(value) {
			out = append(out, finding{fmt.Sprintf("%s[%d]", path, i), "option " + strings.SplitN(s, "=", 2)[0] + " is given a literal"})
		}
	}
	return out
}

// scanText finds token shapes, credential options in scripts and URLs
// with user information in any string.
func scanText(s, path string) []finding {
	var out []finding
	for _, p := range tokenPatterns {
		if p.re.MatchString(s) {
			out = append(out, finding{path, "looks like a " + p.name})
		}
	}
	for _, m := range credentialFlagInText.FindAllStringSubmatch(s, -1) {
		if !isReference(m[1]) {
			out = append(out, finding{path, "a script gives " + strings.TrimSpace(strings.SplitN(strings.TrimSpace(m[0]), "=", 2)[0]) + " a literal"})
		}
	}
	for _, raw := range userInfoURL.FindAllString(s, -1) {
		u, err := url.Parse(raw)
		if err != nil || u.User == nil {
			continue
		}
		_, hasPassword := u.User.Password()
		if hasPassword || !isReference(u.User.Username()) {
			out = append(out, finding{path, "URL with user information"})
		}
	}
	return out
}
