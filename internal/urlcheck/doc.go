// Package urlcheck finds and hides the credentials a URL may carry
// ("scheme://user:password@host"), for every package of cube that takes a
// URL from its caller: such a URL is refused, and the error that refuses it
// must never repeat the password, whether the URL parses or not.
//
//	if urlcheck.HasUserinfo(raw) {
//		return field.Forbidden(path, "must not carry credentials")
//	}
//	return field.Invalid(path, urlcheck.Redact(raw), "must be an http or https URL")
package urlcheck
