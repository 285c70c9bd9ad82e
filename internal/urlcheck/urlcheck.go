package urlcheck

import (
	"regexp"
	"strings"
)

// authority returns where the authority of raw begins and ends: after the
// first "//" and up to the next '/', '?' or '#'. A value without "//" has
// none (ok is false).
func authority(raw string) (start, end int, ok bool) {
	i := strings.Index(raw, "//")
	if i < 0 {
		return 0, 0, false
	}
	start = i + 2
	end = len(raw)
	if j := strings.IndexAny(raw[start:], "/?#"); j >= 0 {
		end = start + j
	}
	return start, end, true
}

// HasUserinfo reports whether raw carries user information: an '@' in its
// authority, whether or not the rest of raw parses as a URL.
func HasUserinfo(raw string) bool {
	start, end, ok := authority(raw)
	return ok && strings.Contains(raw[start:end], "@")
}

// Redact returns raw with its user information replaced by "xxxxx", for a
// message that quotes it; a value without an '@' before its first '/', '?'
// or '#' comes back as it was. It does not need raw to parse (a URL that
// does not parse is exactly one an error quotes), and it errs on the side
// of hiding: a value without "//" ("user:secret@bucket") is read as all
// authority up to its path.
func Redact(raw string) string {
	start, end, ok := authority(raw)
	if !ok {
		start, end = 0, len(raw)
		if j := strings.IndexAny(raw, "/?#"); j >= 0 {
			end = j
		}
	}
	at := strings.LastIndex(raw[start:end], "@")
	if at < 0 {
		return raw
	}
	return raw[:start] + "xxxxx" + raw[start+at:]
}

// embedded matches the user information of a URL inside any text:
// "://", then anything up to an '@' that crosses no '/', '?', '#', '@' or
// space.
var embedded = regexp.MustCompile(`://[^/?#@\s]*@`)

// RedactAll hides the user information of every URL in text (an error's
// detail, a field path built from a caller's key) the way Redact does for
// one URL.
func RedactAll(text string) string { return embedded.ReplaceAllString(text, "://xxxxx@") }

// HasEmbedded reports whether text holds a URL with user information.
func HasEmbedded(text string) bool { return embedded.MatchString(text) }
