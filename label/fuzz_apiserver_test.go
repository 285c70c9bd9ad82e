package label_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

// Argument dictionaries for generated FuzzStudio inputs: valid values
// first (the generator favours them), then hostile ones. A generated
// valid name is made unique: a deleted claim stays behind (its
// kubernetes.io/pvc-protection finalizer has no controller to remove it),
// and a claim's size cannot change.
var (
	corpusNames   = []string{"labels", "ls", "studio", "", "Bad_Name", strings.Repeat("a", 60)}
	corpusSecrets = []string{"admin", "ls-admin", "creds", "", "Bad Secret"}
	corpusKeys    = []string{"email", "password", "token", "", "bad key!", "a/b"}
	corpusSizes   = []string{"10Gi", "1Gi", "500Mi", "", "-1", "lots", "0"}
	corpusHosts   = []string{"", "https://labels.example.com", "http://x", "::", "ftp://x", "http://u:p@x"}
	corpusDBs     = []string{"", "db", "pg-creds", "Bad DB"}
)

// studioCorpus is FuzzStudio's seeds, the inputs go test -fuzz saved, and
// n inputs drawn from the dictionaries with a fixed seed.
func studioCorpus(t *testing.T, n int) []studioInput {
	corpus := append([]studioInput{}, studioSeeds...)
	for _, v := range fuzzcorpus.Saved(t, "FuzzStudio") {
		var s [8]string
		for i := range s {
			s[i] = v[i].(string)
		}
		corpus = append(corpus, studioInput{s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7]})
	}
	for i, b := range fuzzcorpus.Programs(13, n, 8, 8) {
		pick := func(j int, values []string) string { return values[int(b[j])%len(values)] }
		name := pick(0, corpusNames)
		if int(b[0])%len(corpusNames) < 3 {
			name = fmt.Sprintf("%s-%d", name, i)
		}
		corpus = append(corpus, studioInput{name, pick(1, corpusSecrets), pick(2, corpusKeys), pick(3, corpusKeys),
			pick(4, corpusSizes), pick(5, corpusHosts), pick(6, corpusDBs), pick(7, corpusKeys)})
	}
	return corpus
}

// TestFuzzCorpusApplies applies every Studio of the FuzzStudio corpus that
// Objects accepts to the API server (strict field validation) and checks
// that every object is stored as rendered: what cube accepts, the server
// accepts. (FuzzConfigBuilder renders labeling-config XML, which is not
// a Kubernetes object: its round trip is checked in the fuzz target.)
func TestFuzzCorpusApplies(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	fuzzcorpus.StoredAll(t, c, env, ns, studioCorpus(t, 120), 25,
		func(in studioInput) cube.Workload { return in.studio() }, nil)
}
