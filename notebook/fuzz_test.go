package notebook_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/fuzzcorpus"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

// Argument pools, valid values first, then the wrong ones a user passes.
var (
	fuzzNames     = []string{"lab", "alice-lab", "code", "", "Alice_Lab", "1lab", strings.Repeat("n", notebook.MaxNameLength+1)}
	fuzzUsers     = []string{"alice", "bob", "", "bad user", strings.Repeat("u", 64)}
	fuzzBaseURLs  = []string{"/notebook/team-a/lab/", "/", "/hub/user/alice/", "no-slash", "/a//b/", "/x?y=1/", "/%41/"}
	fuzzSecrets   = []string{"lab-token", "tok", "", "Bad_Secret"}
	fuzzKeys      = []string{"token", "password", "", "bad key!"}
	fuzzQuant     = []string{"10Gi", "1", "500m", "", "-1Gi", "lots", "0"}
	fuzzClasses   = []string{"", "fast-ssd", "Bad Class"}
	fuzzHomes     = []string{"", "/home/jovyan", "/data", "relative", "/", "/a/../b"}
	fuzzPorts     = []int32{0, 8888, 9000, -1, 70000}
	fuzzLifetimes = []time.Duration{0, time.Hour, 72 * time.Hour, -time.Second, 8}
	fuzzLabels    = []map[string]string{{"kubernetes.io/metadata.name": "istio-system"}, {"app": "gateway"}, nil, {}, {"bad key": "v"}, {"k": "bad value!"}}
	fuzzLaunchers = []notebook.Launcher{notebook.LaunchDockerStacks, notebook.LaunchKubeflow, notebook.LaunchJupyterServer, "conda"}
	fuzzTexts     = []string{"x", "--debug", "", "sh"}
	fuzzEnvNames  = []string{"X", "HF_HOME", "JUPYTER_TOKEN", "NB_PREFIX", "PASSWORD", "bad name", ""}
	fuzzProfiles  = []hardware.Profile{hardware.H100, hardware.L4, hardware.Ascend910B3, hardware.A100_80G}
	fuzzInts      = []int{1, 2, 0, -1, 9}
	fuzzPaths     = []string{"/data", "/models", "", "relative", "/home/jovyan"}
)

// fuzzNotebook builds a notebook from fuzz input by a random sequence of
// builder calls with random arguments. namespace is the only namespace it
// sets, so that what it accepts can be applied to a test API server.
func fuzzNotebook(data []byte, namespace string) *notebook.Notebook {
	r := fuzzcorpus.NewProgram(data)
	var nb *notebook.Notebook
	switch int(r.Byte()) % 16 {
	case 0, 1, 2, 3, 4:
		nb = notebook.Jupyter(fuzzcorpus.Pick(r, fuzzNames), fuzzcorpus.Pick(r, fuzzUsers))
	case 5, 6, 7, 8:
		nb = notebook.VSCode(fuzzcorpus.Pick(r, fuzzNames), fuzzcorpus.Pick(r, fuzzUsers))
	case 9, 10, 11, 12:
		nb = notebook.RStudio(fuzzcorpus.Pick(r, fuzzNames), fuzzcorpus.Pick(r, fuzzUsers))
	case 13:
		// A zero Notebook is judged as it is: the embedded pod.Builder's
		// methods return the builder they were bound to by the
		// constructor, which a zero value has not got, so chaining them
		// on one yields nil and the next call dereferences it.
		return &notebook.Notebook{}
	case 14, 15:
		nb = nil
	}
	if int(r.Byte())%8 != 7 && nb != nil {
		// Most inputs carry the two settings a notebook cannot do without.
		// (A method of the embedded pod.Builder cannot be called on a nil
		// *Notebook at all: Go dereferences the pointer to reach the
		// embedded field before the method runs.)
		nb = nb.Namespace(namespace).Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(fuzzLabels[0])
	}
	for ops := 0; !r.Done() && ops < 40 && nb != nil; ops++ {
		switch int(r.Byte()) % 24 {
		case 0:
			nb.BaseURL(fuzzcorpus.Pick(r, fuzzBaseURLs))
		case 1:
			nb.Credential(pod.SecretKeyRef{Name: fuzzcorpus.Pick(r, fuzzSecrets), Key: fuzzcorpus.Pick(r, fuzzKeys)})
		case 2:
			nb.Storage(fuzzcorpus.Pick(r, fuzzQuant), fuzzcorpus.Pick(r, fuzzClasses))
		case 3:
			nb.HomeDir(fuzzcorpus.Pick(r, fuzzHomes))
		case 4:
			nb.ServerPort(fuzzcorpus.Pick(r, fuzzPorts))
		case 5:
			nb.MaxLifetime(fuzzcorpus.Pick(r, fuzzLifetimes))
		case 6:
			nb.AllowNamespace(fuzzcorpus.Pick(r, fuzzLabels))
		case 7:
			nb.AllowPods(fuzzcorpus.Pick(r, fuzzLabels), fuzzcorpus.Pick(r, fuzzLabels))
		case 8:
			nb.Launch(fuzzcorpus.Pick(r, fuzzLaunchers))
		case 9:
			nb.Image(fuzzcorpus.Pick(r, []string{"quay.io/jupyter/base-notebook:2025-03-14", "kubeflownotebookswg/jupyter-scipy:v1.9.0", ""}))
		case 10:
			nb.Command(fuzzcorpus.Pick(r, fuzzTexts))
		case 11:
			nb.Args(fuzzcorpus.Pick(r, fuzzTexts), fuzzcorpus.Pick(r, fuzzTexts))
		case 12:
			nb.Env(fuzzcorpus.Pick(r, fuzzEnvNames), fuzzcorpus.Pick(r, fuzzTexts))
		case 13:
			nb.EnvFromSecret(fuzzcorpus.Pick(r, fuzzEnvNames), pod.SecretKeyRef{Name: fuzzcorpus.Pick(r, fuzzSecrets), Key: fuzzcorpus.Pick(r, fuzzKeys)})
		case 14:
			nb.CPU(fuzzcorpus.Pick(r, fuzzQuant)).Memory(fuzzcorpus.Pick(r, fuzzQuant))
		case 15:
			nb.On(fuzzcorpus.Pick(r, fuzzProfiles))
		case 16:
			nb.Accelerators(fuzzcorpus.Pick(r, fuzzInts))
		case 17:
			nb.Slice(vgpu.Slice(hardware.A100_80G).Memory(fuzzcorpus.Pick(r, []string{"20Gi", "0", "lots"})).Cores(fuzzcorpus.Pick(r, []int{30, 0, 200})))
		case 18:
			nb.SharedMemory(fuzzcorpus.Pick(r, fuzzQuant))
		case 19:
			nb.PVC(fuzzcorpus.Pick(r, []string{"data", "", "Bad_Claim"}), fuzzcorpus.Pick(r, fuzzPaths))
		case 20:
			nb.NodeSelector(fuzzcorpus.Pick(r, []string{"pool", "bad key", ""}), fuzzcorpus.Pick(r, []string{"gpu", "bad value!"}))
		case 21:
			nb.PodLabel(fuzzcorpus.Pick(r, []string{"team", "bad key"}), fuzzcorpus.Pick(r, []string{"nlp", "bad value!"}))
		case 22:
			nb.Label(fuzzcorpus.Pick(r, []string{"team", "bad key"}), fuzzcorpus.Pick(r, []string{"nlp", "bad value!"}))
		case 23:
			nb.Namespace(fuzzcorpus.Pick(r, []string{namespace, "", "Bad NS"}))
		}
	}
	return nb
}

const nilNotebook = "notebook: the *Notebook is nil: make one with Jupyter, VSCode or RStudio"

// checkNotebook asserts what every outcome of Objects must satisfy:
// refusals are field.ErrorList aggregates whose errors name a path (or the
// nil-notebook error); accepted notebooks give the same fresh objects again,
// each labelled with the release, with Build returning the StatefulSet.
func checkNotebook(t *testing.T, nb *notebook.Notebook, objs []client.Object, err error) {
	t.Helper()
	sts, buildErr := nb.Build()
	assert.Equal(t, err == nil, buildErr == nil, "Build and Objects agree")
	if err != nil {
		if nb == nil {
			require.EqualError(t, err, nilNotebook)
			return
		}
		fuzzcorpus.FieldErrors(t, err)
		return
	}
	require.Len(t, objs, 4)
	for _, o := range objs {
		assert.Equal(t, podspec.Of(&nb.Handle).Name(), o.GetLabels()[cube.LabelRelease], "%T %s", o, o.GetName())
	}
	assert.Equal(t, sts.Name, objs[3].GetName())
	again, err := nb.Objects()
	require.NoError(t, err)
	require.NotSame(t, objs[3], again[3], "fresh objects")
}

var notebookSeeds = [][]byte{
	{0, 0},
	{5, 0, 0, 0},
	{9, 1, 0, 0, 15, 0, 16, 0},
	{0, 0, 0, 8, 1, 9, 1},
	{0, 0, 0, 8, 2, 0, 2, 17, 0, 0},
	{14},
	{13, 0, 0},
	{0, 0, 0, 8, 1, 4, 2, 3, 2, 11, 1, 1},
}

func FuzzNotebookBuilder(f *testing.F) {
	for _, s := range notebookSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		nb := fuzzNotebook(data, "fuzz-ns")
		objs, err := nb.Objects()
		checkNotebook(t, nb, objs, err)
	})
}

// Whatever the notebook fuzzer's inputs get accepted by Objects, the API
// server accepts too, through a strict server-side apply (dry run).
func TestFuzzCorpusAcceptedByAPIServer(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	c := cube.NewFromClient(env.Client, cube.Namespace(ns))
	corpus := append(append([][]byte{}, notebookSeeds...), fuzzcorpus.Programs(7, 800, 4, 43)...)
	accepted := 0
	for i, data := range corpus {
		nb := fuzzNotebook(data, ns)
		objs, err := nb.Objects()
		checkNotebook(t, nb, objs, err)
		if err != nil {
			continue
		}
		accepted++
		_, err = c.Apply(t.Context(), nb, cube.DryRun)
		require.NoError(t, err, "input %d %q", i, data)
	}
	t.Logf("%d accepted inputs applied", accepted)
	require.Greater(t, accepted, 20, "the corpus exercises accepted notebooks, not only refusals")
}
