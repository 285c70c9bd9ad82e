package urlcheck

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHasUserinfoAndRedact(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://AKIA:secret@bucket/key":     "s3://xxxxx@bucket/key",
		"https://u:p@h:8080/v1?q=a@b#c@d": "https://xxxxx@h:8080/v1?q=a@b#c@d",
		"http://u:p@h:port":               "http://xxxxx@h:port", // does not parse: redacted all the same
		"ftp://user@host":                 "ftp://xxxxx@host",
		"http://a@b@c/x":                  "http://xxxxx@c/x",
		"http://u:pa ss@h":                "http://xxxxx@h",
		"//u:p@h":                         "//xxxxx@h",
		"pvc://models/qwen@v1":            "",
		"https://host/path@x":             "",
		"https://host?x=u:p@h":            "",
		"":                                "",
	} {
		t.Run(raw, func(t *testing.T) {
			assert.Equal(t, want != "", HasUserinfo(raw))
			if want == "" {
				assert.Equal(t, raw, Redact(raw))
				return
			}
			got := Redact(raw)
			assert.Equal(t, want, got)
			assert.NotContains(t, got, "secret")
			assert.False(t, HasUserinfo(got) && strings.Contains(got, ":p@"))
		})
	}
}

// A value without "//" has no user information, but Redact still hides
// what precedes an '@' before its path: a message must not show it.
func TestRedactHidesWithoutAScheme(t *testing.T) {
	for raw, want := range map[string]string{
		"AKIA:secret@bucket/prefix":  "xxxxx@bucket/prefix",
		"mailto:someone@example.com": "xxxxx@example.com",
		"bucket/a@b":                 "bucket/a@b",
		"no at sign":                 "no at sign",
	} {
		assert.False(t, HasUserinfo(raw), raw)
		assert.Equal(t, want, Redact(raw), raw)
	}
}

func TestRedactAllHidesEveryURLInText(t *testing.T) {
	text := `scheduler "s3://AKIA:secret@b/k" and label key https://u:p@h/x, but not pvc://models/qwen@v1 or a@b`
	assert.True(t, HasEmbedded(text))
	assert.Equal(t, `scheduler "s3://xxxxx@b/k" and label key https://xxxxx@h/x, but not pvc://models/qwen@v1 or a@b`, RedactAll(text))
	assert.False(t, HasEmbedded(RedactAll(text)) && strings.Contains(RedactAll(text), "secret"))
	assert.False(t, HasEmbedded("pvc://models/qwen@v1 and mail a@b"))
}

func FuzzRedact(f *testing.F) {
	for _, s := range []string{"s3://AKIA:secret@b/k", "http://u:p@h:port", "//@", "x://a@b@c?d@e"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got := Redact(raw)
		if !strings.Contains(raw, "//") {
			return // TestRedactHidesWithoutAScheme
		}
		if !HasUserinfo(raw) {
			if got != raw {
				t.Fatalf("Redact(%q) = %q, changed a value without user information", raw, got)
			}
			return
		}
		// What precedes the authority and what follows its user
		// information are kept; the user information reads xxxxx.
		start, end, _ := authority(raw)
		tail := raw[start+strings.LastIndex(raw[start:end], "@"):]
		if !strings.HasPrefix(got, raw[:start]+"xxxxx") || !strings.HasSuffix(got, tail) || len(got) != start+5+len(tail) {
			t.Fatalf("Redact(%q) = %q, want %q + xxxxx + %q", raw, got, raw[:start], tail)
		}
	})
}

func ExampleRedact() {
	fmt.Println(HasUserinfo("s3://AKIA:secret@bucket/key"), Redact("s3://AKIA:secret@bucket/key"))
	fmt.Println(HasUserinfo("pvc://models/qwen@v1"), Redact("pvc://models/qwen@v1"))
	// Output:
	// true s3://xxxxx@bucket/key
	// false pvc://models/qwen@v1
}
