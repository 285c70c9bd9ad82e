package market_test

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
)

// FuzzParseReference: any string parses or fails with an error, and what
// parses prints back to a reference that parses to the same value.
func FuzzParseReference(f *testing.F) {
	for _, s := range []string{"bot", "bot@3", "bot@production", "bot@", "@1", "a@b@c", "bot@01", "bot@99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := market.ParseReference(s)
		if err != nil {
			return
		}
		again, err := market.ParseReference(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, again)
	})
}

// FuzzParseLMEvalResults: arbitrary bytes never panic, and every metric
// returned is named task/metric and finite.
func FuzzParseLMEvalResults(f *testing.F) {
	f.Add([]byte(`{"results":{"mmlu":{"acc,none":0.5,"acc_stderr,none":"N/A","alias":"mmlu"}}}`))
	f.Add([]byte(`{"results":{"gsm8k":{"exact_match,strict-match":1e308}}}`))
	f.Add([]byte(`{"results":{"":{",":1}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		metrics, err := market.ParseLMEvalResults(data)
		if err != nil {
			return
		}
		for name, v := range metrics {
			assert.Contains(t, name, "/")
			assert.False(t, v != v, "NaN for %s", name)
		}
	})
}

// FuzzParseDownloadSummary: arbitrary messages never panic; accepted ones
// have a non-negative size and an empty or well-formed checksum.
func FuzzParseDownloadSummary(f *testing.F) {
	f.Add(`{"bytes":1,"checksum":"sha256:` + sha64 + `"}`)
	f.Add(`{"bytes":-1}`)
	f.Fuzz(func(t *testing.T, msg string) {
		s, err := market.ParseDownloadSummary(msg)
		if err != nil {
			return
		}
		assert.GreaterOrEqual(t, s.Bytes, int64(0))
	})
}

// downloadInput is one input of FuzzDownloadBuild.
type downloadInput struct{ name, source, claim, into, rev, pattern string }

func (in downloadInput) job() *market.DownloadJob {
	d := market.Download(in.name, in.source, in.claim).Into(in.into).Revision(in.rev)
	if in.pattern != "" {
		d.Include(in.pattern)
	}
	return d
}

// downloadSeeds are FuzzDownloadBuild's seeds; TestFuzzCorpusApplies runs
// them too.
var downloadSeeds = []downloadInput{
	{"qwen", "hf://Qwen/Qwen2.5-7B-Instruct@main", "models", "", "", "*.json"},
	{"x", "s3://bucket/a/b", "models", "sub/dir", "", ""},
	{"x", "modelscope://a/b", "m", "../../etc", "-rf", "--all"},
}

// FuzzDownloadBuild: any source, claim, directory, revision and pattern
// builds a Job or returns an error, never panics; a Job's arguments never
// carry a value that starts like a flag where a value belongs.
func FuzzDownloadBuild(f *testing.F) {
	for _, s := range downloadSeeds {
		f.Add(s.name, s.source, s.claim, s.into, s.rev, s.pattern)
	}
	f.Fuzz(func(t *testing.T, name, source, claim, into, rev, pattern string) {
		job, err := downloadInput{name, source, claim, into, rev, pattern}.job().Build()
		if err != nil {
			return
		}
		c := job.Spec.Template.Spec.Containers[0]
		for i, a := range c.Args[1:] {
			if c.Args[i] == "--revision" || c.Args[i] == "--include" {
				assert.NotEqual(t, byte('-'), a[0], "value %q after %s", a, c.Args[i])
			}
		}
		assert.NotContains(t, strings.Split(job.Annotations[market.AnnotationTarget], "/"), "..", "the target stays on the claim")
	})
}

// FuzzVersionValidate: any version validates or not without panicking,
// and a valid one is accepted by the file store.
func FuzzVersionValidate(f *testing.F) {
	f.Add("bot", "pvc://models/bot", "bf16", "sha256:"+sha64, "lora", "mmlu/acc", 0.5)
	f.Add("Bot", "hf://a", "fp12", "md5:1", "a/b", "", math.Inf(1))
	f.Fuzz(func(t *testing.T, model, uri, dtype, checksum, tag, metric string, value float64) {
		v := market.Version{
			Model: model, Artifact: market.Artifact{URI: uri, DType: models.DType(dtype), Checksum: checksum},
			Tags: []string{tag}, Metrics: map[string]float64{metric: value},
		}
		if v.Validate() != nil {
			return
		}
		s, err := market.OpenFileStore(t.TempDir() + "/r.db")
		require.NoError(t, err)
		got, err := s.Create(t.Context(), v)
		require.NoError(t, err)
		assert.Equal(t, v.Artifact, got.Artifact)
	})
}

// FuzzArtifactURI: any artifact URI validates or not without panicking; an
// accepted one carries no credentials and no '.' or '..' segment, and a
// refusal never repeats what stands before an '@' in the host part (a
// password).
func FuzzArtifactURI(f *testing.F) {
	for _, s := range []string{"pvc://models/bot", "s3://AKIA:pw@bucket/p", "hf://Qwen/Qwen2.5-7B@main", "pvc://models/../../etc",
		"modelscope://a/b", "hf://u:pw@a/b", "s3://bucket/a/./b", "pvc://m/a@b/c"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		v := sampleVersion("bot")
		v.Artifact.URI = uri
		err := v.Validate()
		_, rest, _ := strings.Cut(uri, "://")
		host := rest
		if i := strings.IndexAny(host, "/?#"); i >= 0 {
			host = host[:i]
		}
		userinfo, _, hasAt := strings.Cut(host, "@")
		if err == nil {
			assert.False(t, hasAt, "credentials accepted in %q", uri)
			for seg := range strings.SplitSeq(strings.SplitN(rest, "@", 2)[0], "/") {
				assert.NotContains(t, []string{".", ".."}, seg, "dot segment accepted in %q", uri)
			}
			return
		}
		if hasAt && len(userinfo) >= 4 {
			assert.NotContains(t, err.Error(), userinfo, "the refusal repeats the credentials of %q", uri)
		}
	})
}

// FuzzEvaluateBuild: any artifact, task, endpoint and served model builds
// an evaluation Job or returns an error; an accepted Job's command line
// keeps the lm-evaluation-harness contract (no flag it lacks, no model
// argument smuggled in through a path, a name or a revision).
func FuzzEvaluateBuild(f *testing.F) {
	f.Add("pvc://models/bot", "mmlu", "", "")
	f.Add("hf://acme/bot@v3", "gsm8k", "http://bot-api:8000", "bot")
	f.Add("hf://acme/bot@v3,trust_remote_code=True", "mmlu", "http://bot-api:8000/v1", "bot=x")
	f.Add("pvc://models/a,b", "-x", "http://u:p@h", "a,b")
	lmEval, err := contract.Load("testdata/contracts/lm-eval.tsv")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, uri, task, endpoint, served string) {
		e := market.Evaluate("e", registered(uri), task)
		if endpoint != "" {
			e.Endpoint(endpoint, served)
		} else {
			e.On(hardware.H100).Accelerators(1)
		}
		job, err := e.Build()
		if err != nil {
			return
		}
		args := job.Spec.Template.Spec.Containers[0].Args
		require.Equal(t, []string{"lm_eval", "run"}, args[:2])
		_, err = lmEval.CheckArgs("fuzz", args[2:])
		require.NoError(t, err, "%q", args)
		model := flagValue(args, "--model")
		require.NoError(t, lmEval.CheckKeys("fuzz", modelArgKeys(t, model, flagValue(args, "--model_args"))), "%q", args)
	})
}
