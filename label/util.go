package label

import (
	"cmp"
	"maps"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/urlcheck"
)

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }

// checkHTTPURL checks that raw is an http or https URL with a host and no
// user information; use says what it is for. The value an error shows is
// redacted, so a password in it is never repeated.
func checkHTTPURL(p *field.Path, raw, use string) *field.Error {
	u, err := url.Parse(raw)
	switch {
	case strings.TrimSpace(raw) == "":
		return field.Required(p, use)
	case err != nil:
		return field.Invalid(p, urlcheck.Redact(raw), "not a URL: "+use)
	case u.User != nil:
		return field.Invalid(p, u.Redacted(), "must not carry credentials (user:password@): "+use)
	case strings.Contains(u.Opaque, "@"):
		return field.Invalid(p, urlcheck.Redact(raw), "must not carry credentials (user:password@): "+use)
	case (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return field.Invalid(p, urlcheck.Redact(raw), "must be an http or https URL with a host: "+use)
	}
	return nil
}
