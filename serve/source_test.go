package serve_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/serve"
)

func TestParseSource(t *testing.T) {
	cases := map[string]serve.Source{
		"Qwen/Qwen2.5-7B-Instruct":                 {Kind: serve.SourceHuggingFace, Repo: "Qwen/Qwen2.5-7B-Instruct"},
		"hf://meta-llama/Llama-3.1-8B-Instruct":    {Kind: serve.SourceHuggingFace, Repo: "meta-llama/Llama-3.1-8B-Instruct"},
		"hf://org/model@refs/pr/2":                 {Kind: serve.SourceHuggingFace, Repo: "org/model", Revision: "refs/pr/2"},
		"modelscope://Qwen/Qwen2.5-7B-Instruct":    {Kind: serve.SourceModelScope, Repo: "Qwen/Qwen2.5-7B-Instruct"},
		"pvc://models":                             {Kind: serve.SourcePVC, Claim: "models"},
		"pvc://models/":                            {Kind: serve.SourcePVC, Claim: "models"},
		"pvc://models/qwen/7b/":                    {Kind: serve.SourcePVC, Claim: "models", Path: "qwen/7b"},
		"s3://my-bucket":                           {Kind: serve.SourceS3, Bucket: "my-bucket"},
		"s3://my.bucket-1/llama/3.1/8b":            {Kind: serve.SourceS3, Bucket: "my.bucket-1", Prefix: "llama/3.1/8b"},
		"ollama://qwen2.5:7b":                      {Kind: serve.SourceOllama, Repo: "qwen2.5:7b"},
		"ollama://library/llama3.1:8b-instruct-q4": {Kind: serve.SourceOllama, Repo: "library/llama3.1:8b-instruct-q4"},
	}
	for in, want := range cases {
		t.Run(in, func(t *testing.T) {
			got, err := serve.ParseSource(in)
			require.NoError(t, err)
			assert.Equal(t, want, got)
			again, err := serve.ParseSource(got.String())
			require.NoError(t, err)
			assert.Equal(t, got, again, "String round-trips")
		})
	}
}

func TestParseSourceErrors(t *testing.T) {
	cases := map[string]string{
		"":                                    "a model is required",
		"Qwen":                                "must be a repository id org/name",
		"a/b/c":                               "must be a repository id org/name",
		"hf://org/":                           "must be a repository id org/name",
		"hf://-org/model":                     `"-org" must not start or end with '-' or '.'`,
		"hf://org/mo--del":                    `"mo--del" must not contain '--' or '..'`,
		"hf://org/mödel":                      `"mödel" may only hold letters, digits`,
		"hf://org/" + strings.Repeat("m", 97): "is longer than 96 characters",
		"hf://org/model@":                     "revision after '@' is empty",
		"hf://org/model@../x":                 "is not a valid branch, tag or commit",
		"hf://org/model@a b":                  "must not contain whitespace",
		"pvc://Models/x":                      `claim "Models"`,
		"pvc://models/../etc":                 "must not contain '.' or '..' segments",
		"pvc://models/a//b":                   "has an empty segment",
		`pvc://models/a\b`:                    "must use '/' separators",
		"s3://ab":                             "must be 3 to 63 characters",
		"s3://-bucket":                        "must start and end with a letter or digit",
		"s3://my..bucket":                     "must not contain '..'",
		"s3://bucket/" + strings.Repeat("p", 1025): "path must be at most 1024 characters",
		"gs://bucket/model":                        `unknown scheme "gs"`,
		"hf:/org/model":                            "malformed scheme",
		"ollama://":                                "an Ollama model name is required",
		"ollama://qwen:7b:q4":                      "more than one ':'",
		"ollama://qwen:":                           "is not a model name",
		"ollama://qwen 7b":                         "must not contain whitespace",
		"hf://org/model\x00":                       "control characters",
		strings.Repeat("a", 2049):                  "at most 2048 characters",
	}
	for in, detail := range cases {
		t.Run(in, func(t *testing.T) {
			_, err := serve.ParseSource(in)
			errs := fieldErrors(t, err)
			require.Len(t, errs, 1)
			assert.Equal(t, "model", errs[0].Field, "the error names the field")
			assert.Contains(t, errs[0].Detail, detail)
			assert.Contains(t, []field.ErrorType{field.ErrorTypeInvalid, field.ErrorTypeRequired}, errs[0].Type)
		})
	}
}

// FuzzParseSource: any input either parses into a source whose canonical
// URI parses back to itself, or fails with one error naming the field.
// Plain `go test` runs the seeds; `go test -fuzz FuzzParseSource ./serve`
// explores.
func FuzzParseSource(f *testing.F) {
	for _, seed := range []string{
		"", "Qwen/Qwen2.5-7B-Instruct", "hf://org/model@main", "hf://org/model@refs/pr/2",
		"modelscope://Qwen/Qwen2.5-7B-Instruct", "pvc://models/a/b/", "pvc://models", "s3://bucket/prefix/x",
		"s3://b", "ollama://qwen2.5:7b", "gs://x", "hf:/x", "pvc://m/../x", "hf://a/b@", "://", "hf://", "s3://a..b/x",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, in string) {
		src, err := serve.ParseSource(in)
		if err != nil {
			errs := fieldErrors(t, err)
			if len(errs) != 1 || errs[0].Field != "model" {
				t.Fatalf("ParseSource(%q) = %v; want one error on the model field", in, err)
			}
			return
		}
		again, err := serve.ParseSource(src.String())
		if err != nil {
			t.Fatalf("ParseSource(%q).String() = %q does not parse: %v", in, src.String(), err)
		}
		if again != src {
			t.Fatalf("ParseSource(%q) = %#v but its String %q parses to %#v", in, src, src.String(), again)
		}
		if src.String() != again.String() {
			t.Fatalf("String is not canonical for %q", in)
		}
	})
}
