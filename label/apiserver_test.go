package label_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/pod"
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

// The Studio's objects are applied to the real kube-apiserver of
// internal/testsupport/testenv with strict field validation: a field the schema does
// not know fails. No kubelet runs there, so Label Studio does not start.

func TestStudioAppliesStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for name, w := range map[string]cube.Workload{
		"sqlite":   label.Studio("ls-sqlite").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}),
		"postgres": label.Studio("ls-pg").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}).Postgres(pod.SecretKeyRef{Name: "db", Key: "password"}, "1Gi", ""),
		"external": label.Studio("ls-ext").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}).ExternalDatabase("rds"),
		"backend":  label.MLBackend("qwen-labeler", "registry.local/labeler:1").Namespace(ns).Model("http://qwen:8000", "qwen").APIKey(pod.SecretKeyRef{Name: "qwen-key", Key: "key"}),
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := w.Objects()
			require.NoError(t, err)
			rel, err := cc.Apply(t.Context(), w)
			require.NoError(t, err)
			assert.Len(t, rel.Objects, len(objs))
			want := objs[len(objs)-1].(*appsv1.Deployment)
			got := &appsv1.Deployment{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: want.Name}, got))
			assert.Equal(t, want.Spec.Template.Spec.Containers[0].Env, got.Spec.Template.Spec.Containers[0].Env)
			assert.Equal(t, want.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path, got.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
			before := got.ResourceVersion
			_, err = cc.Apply(t.Context(), w)
			require.NoError(t, err)
			again := &appsv1.Deployment{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: want.Name}, again))
			assert.Equal(t, before, again.ResourceVersion, "applying twice changes nothing")
		})
	}
}
