package podspec

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// secretNameParts are the words that mark an environment variable as
// holding a credential.
var secretNameParts = []string{"TOKEN", "SECRET", "PASSWORD", "PASSWD", "API_KEY", "APIKEY", "ACCESS_KEY", "PRIVATE_KEY", "CREDENTIAL"}

// notSecretSuffixes mark variables that name or locate a credential
// rather than hold it (HF_TOKEN_PATH, AWS_SECRET_NAME).
var notSecretSuffixes = []string{"_FILE", "_PATH", "_DIR", "_NAME", "_URL", "_ENDPOINT"}

// SecretLiteral reports whether value, set under the environment variable
// name, looks like a credential written in clear: name says it holds a
// token, password or key, and value is a single word of at least eight
// characters that is neither a $(VAR) reference nor a path. Such values
// belong in a Secret (EnvFromSecret), never in a rendered object.
func SecretLiteral(name, value string) bool {
	upper := strings.ToUpper(name)
	secretNamed := false
	for _, part := range secretNameParts {
		if strings.Contains(upper, part) {
			secretNamed = true
			break
		}
	}
	for _, suffix := range notSecretSuffixes {
		if strings.HasSuffix(upper, suffix) {
			secretNamed = false
		}
	}
	switch {
	case !secretNamed, len(value) < 8, strings.ContainsAny(value, " \t\n"):
		return false
	case strings.HasPrefix(value, "$("), strings.HasPrefix(value, "/"):
		return false
	}
	return true
}

// SecretLiteralError is the problem reported for a SecretLiteral under
// path; it never repeats the value.
func SecretLiteralError(path *field.Path, name string) *field.Error {
	return field.Forbidden(path, name+" looks like a credential written in clear, which would be stored in the rendered objects: "+
		"put it in a Secret and use EnvFromSecret(\""+name+"\", secret, key)")
}
