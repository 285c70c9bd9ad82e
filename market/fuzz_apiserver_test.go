package market_test

import (
	"strings"
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// Argument dictionaries for generated FuzzDownloadBuild inputs: valid
// values first (the generator favours them), then hostile ones.
var (
	corpusNames   = []string{"qwen", "glm-4", "x", "", "Bad_Name", strings.Repeat("a", 60), "-x"}
	corpusSources = []string{"hf://Qwen/Qwen2.5-7B-Instruct", "modelscope://ZhipuAI/glm-4-9b-chat", "s3://bucket/a/b", "hf://org/m@main", "hf://", "s3://bucket", "ftp://x", "", "pvc://models/x", "hf://a/b/c", "modelscope://0/"}
	corpusClaims  = []string{"models", "m", "", "Bad Claim", strings.Repeat("c", 300)}
	corpusInto    = []string{"", "sub/dir", "Qwen", "../../etc", "/abs", "a b", "../..0/0"}
	corpusRevs    = []string{"", "main", "a09a35458c702b33eeacc393d103063234e8bc28", "-rf", "v1.0", "with space"}
	corpusPattern = []string{"", "*.json", "*.safetensors", "--all", "a\nb", "-"}
)

// downloadCorpus is FuzzDownloadBuild's seeds, the inputs go test -fuzz
// saved, and n inputs drawn from the dictionaries with a fixed seed.
func downloadCorpus(t *testing.T, n int) []downloadInput {
	corpus := append([]downloadInput{}, downloadSeeds...)
	for _, v := range fuzzcorpus.Saved(t, "FuzzDownloadBuild") {
		var s [6]string
		for i := range s {
			s[i] = v[i].(string)
		}
		corpus = append(corpus, downloadInput{s[0], s[1], s[2], s[3], s[4], s[5]})
	}
	for _, b := range fuzzcorpus.Programs(11, n, 6, 6) {
		pick := func(i int, values []string) string { return values[int(b[i])%len(values)] }
		corpus = append(corpus, downloadInput{pick(0, corpusNames), pick(1, corpusSources), pick(2, corpusClaims),
			pick(3, corpusInto), pick(4, corpusRevs), pick(5, corpusPattern)})
	}
	return corpus
}

// TestFuzzCorpusApplies applies every download Job of the FuzzDownloadBuild
// corpus that Build accepts to the API server (strict field validation)
// and checks it is stored as rendered: what cube accepts, the server
// accepts.
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	fuzzcorpus.StoredAll(t, c, env, ns, downloadCorpus(t, 400), 60,
		func(in downloadInput) cube.Workload { return in.job() }, nil)
}
