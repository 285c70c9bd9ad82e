package modelsource

import (
	"fmt"
	"path"
	"strings"
	"unicode"
)

// CheckRepo applies the Hugging Face Hub's repository id rules (ModelScope
// ids follow the same shape): org/name, each part of letters, digits, "-",
// "_" and ".", not starting or ending with "-" or ".", without "--" or "..",
// at most 96 characters.
func CheckRepo(repo string) string {
	org, name, ok := strings.Cut(repo, "/")
	if !ok || strings.Contains(name, "/") {
		return "must be a repository id org/name"
	}
	for _, part := range []string{org, name} {
		switch {
		case part == "":
			return "must be a repository id org/name"
		case len(part) > 96:
			return fmt.Sprintf("%q is longer than 96 characters", part)
		case strings.IndexFunc(part, func(r rune) bool { return !IsRepoChar(r) }) >= 0:
			return fmt.Sprintf("%q may only hold letters, digits, '-', '_' and '.'", part)
		case strings.HasPrefix(part, "-") || strings.HasPrefix(part, ".") || strings.HasSuffix(part, "-") || strings.HasSuffix(part, "."):
			return fmt.Sprintf("%q must not start or end with '-' or '.'", part)
		case strings.Contains(part, "--") || strings.Contains(part, ".."):
			return fmt.Sprintf("%q must not contain '--' or '..'", part)
		}
	}
	return ""
}

// IsRepoChar reports whether r may appear in a hub repository id.
func IsRepoChar(r rune) bool {
	return r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r == '.')
}

func CheckRevision(rev string) string {
	switch {
	case rev == "":
		return "revision after '@' is empty"
	case len(rev) > 255:
		return "revision is longer than 255 characters"
	case strings.Contains(rev, "..") || strings.HasPrefix(rev, "/") || strings.HasSuffix(rev, "/") || strings.HasPrefix(rev, "-"):
		return fmt.Sprintf("revision %q is not a valid branch, tag or commit", rev)
	case strings.IndexFunc(rev, func(r rune) bool { return !IsRepoChar(r) && r != '/' }) >= 0:
		return fmt.Sprintf("revision %q may only hold letters, digits, '-', '_', '.' and '/'", rev)
	}
	return ""
}

// CheckBucket applies the S3 bucket naming rules: 3 to 63 lower-case
// letters, digits, dots and hyphens, starting and ending with a letter or
// digit, without "..".
func CheckBucket(bucket string) string {
	switch {
	case len(bucket) < 3 || len(bucket) > 63:
		return fmt.Sprintf("bucket %q must be 3 to 63 characters", bucket)
	case strings.IndexFunc(bucket, func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-') }) >= 0:
		return fmt.Sprintf("bucket %q may only hold lower-case letters, digits, '.' and '-'", bucket)
	case !isAlnum(bucket[0]) || !isAlnum(bucket[len(bucket)-1]):
		return fmt.Sprintf("bucket %q must start and end with a letter or digit", bucket)
	case strings.Contains(bucket, ".."):
		return fmt.Sprintf("bucket %q must not contain '..'", bucket)
	}
	return ""
}

func isAlnum(b byte) bool { return b >= 'a' && b <= 'z' || b >= '0' && b <= '9' }

// CleanSubPath checks the path after a claim or bucket: relative, without
// "." or ".." segments (which would escape the volume), without empty
// segments except one trailing slash, at most 1024 characters.
func CleanSubPath(p string) (string, string) {
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", ""
	}
	if len(p) > 1024 {
		return "", "path must be at most 1024 characters"
	}
	if strings.ContainsAny(p, `\`) {
		return "", fmt.Sprintf("path %q must use '/' separators", p)
	}
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "":
			return "", fmt.Sprintf("path %q has an empty segment", p)
		case ".", "..":
			return "", fmt.Sprintf("path %q must not contain '.' or '..' segments", p)
		}
	}
	return path.Clean(p), ""
}
