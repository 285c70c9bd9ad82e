package notebook_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
)

// The three ways a Jupyter image starts: the Docker Stacks' start-notebook.py
// (default), Kubeflow's s6 service reading NB_PREFIX
// (kubeflow/kubeflow components/example-notebook-servers/jupyter/s6/
// services.d/jupyterlab/run), and plain `jupyter server`.
func TestJupyterLaunchers(t *testing.T) {
	jupyter := func(l notebook.Launcher) corev1.Container {
		t.Helper()
		_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").Namespace("team-a").
			Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio).Launch(l))
		return sts.Spec.Template.Spec.Containers[0]
	}
	serverApp := []string{
		"--ServerApp.ip=0.0.0.0",
		"--ServerApp.port=8888",
		"--ServerApp.base_url=/notebook/team-a/lab/",
		"--ServerApp.root_dir=/home/jovyan",
	}
	prefix := corev1.EnvVar{Name: "NB_PREFIX", Value: "/notebook/team-a/lab"}

	stacks := jupyter(notebook.LaunchDockerStacks)
	assert.Nil(t, stacks.Command)
	assert.Equal(t, append([]string{"start-notebook.py"}, serverApp...), stacks.Args)
	assert.Contains(t, stacks.Env, prefix)

	kubeflow := jupyter(notebook.LaunchKubeflow)
	assert.Nil(t, kubeflow.Command, "the image's /init runs its s6 service")
	assert.Nil(t, kubeflow.Args)
	assert.Contains(t, kubeflow.Env, prefix, "the s6 service passes --ServerApp.base_url=${NB_PREFIX}")
	assert.Equal(t, "/notebook/team-a/lab/api", kubeflow.ReadinessProbe.HTTPGet.Path)

	server := jupyter(notebook.LaunchJupyterServer)
	assert.Equal(t, []string{"jupyter", "server"}, server.Command)
	assert.Equal(t, append(serverApp, "--ServerApp.open_browser=False"), server.Args)
	assert.Contains(t, server.Env, prefix)

	// A base URL of "/" is an empty prefix, as Kubeflow's images expect.
	_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").BaseURL("/").Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio))
	assert.Contains(t, sts.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "NB_PREFIX", Value: ""})
}

func TestJupyterLauncherErrors(t *testing.T) {
	base := func() *notebook.Notebook {
		return notebook.Jupyter("lab", "alice").Namespace("team-a").Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio)
	}
	_, err := base().Launch(notebook.LaunchKubeflow).ServerPort(9000).HomeDir("/data").Args("--debug").Objects()
	requireFieldErrors(t, err,
		fieldErr{field.ErrorTypeInvalid, "serverPort", "Kubeflow's images listen on 8888"},
		fieldErr{field.ErrorTypeInvalid, "homeDir", "Kubeflow's images serve their $HOME"},
		fieldErr{field.ErrorTypeInvalid, "args", "Kubeflow's images take no arguments"},
	)
	_, err = base().Launch(notebook.LaunchKubeflow).ServerPort(8888).HomeDir("/home/jovyan").Objects()
	assert.NoError(t, err, "what the image fixes may be spelled out")
	_, err = base().Launch("conda").Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeNotSupported, "launcher", `"docker-stacks", "kubeflow", "jupyter-server"`})
	_, err = notebook.VSCode("code", "bob").Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).AllowNamespace(istio).Launch(notebook.LaunchKubeflow).Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeForbidden, "launcher", "only Jupyter notebooks take a launcher"})
	_, err = base().Env("NB_PREFIX", "/elsewhere").Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeInvalid, "env[NB_PREFIX]", "is set by the notebook"})
}

// Every launcher's objects are what the API server accepts.
func TestApplyStrictLaunchers(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, l := range []notebook.Launcher{notebook.LaunchDockerStacks, notebook.LaunchKubeflow, notebook.LaunchJupyterServer} {
		nb := notebook.Jupyter("lab-"+string(l), "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "tok", Key: "token"}).AllowNamespace(istio).
			Launch(l).Image("kubeflownotebookswg/jupyter-scipy:v1.9.0")
		_, err := cc.Apply(t.Context(), nb)
		require.NoError(t, err, l)
	}
}

// A nil Notebook records nothing and says so; a zero one names its
// constructors.
func TestNilAndZeroNotebook(t *testing.T) {
	var nb *notebook.Notebook
	require.NotPanics(t, func() {
		nb = nb.BaseURL("/x/").Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).Storage("1Gi", "").HomeDir("/h").ServerPort(1).
			MaxLifetime(time.Hour).AllowNamespace(istio).AllowPods(nil, nil).Launch(notebook.LaunchKubeflow)
	})
	assert.Nil(t, nb)
	const msg = "notebook: the *Notebook is nil: make one with Jupyter, VSCode or RStudio"
	_, err := nb.Objects()
	assert.EqualError(t, err, msg)
	_, err = nb.Build()
	assert.EqualError(t, err, msg)
	// Render finds the typed nil before asking the notebook.
	assert.EqualError(t, cube.Render(io.Discard, nb), "render workload 0: workload *notebook.Notebook is nil")

	_, err = (&notebook.Notebook{}).Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeRequired, "ide", "use Jupyter, VSCode or RStudio"})
}

// fieldErr is one expected field error: its type, path and a substring of
// its detail (or of its bad value).
type fieldErr struct {
	typ    field.ErrorType
	path   string
	detail string
}

// requireFieldErrors asserts that err holds exactly the wanted field errors.
func requireFieldErrors(t *testing.T, err error, want ...fieldErr) {
	t.Helper()
	require.Error(t, err)
	var agg utilerrors.Aggregate
	require.True(t, errors.As(err, &agg), "error is a field.ErrorList aggregate: %v", err)
	require.Len(t, agg.Errors(), len(want), "errors:\n%v", err)
	for _, w := range want {
		found := false
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) && fe.Type == w.typ && fe.Field == w.path &&
				(strings.Contains(fe.Detail, w.detail) || strings.Contains(fmt.Sprint(fe.BadValue), w.detail) || strings.Contains(fe.Error(), w.detail)) {
				found = true
			}
		}
		assert.True(t, found, "missing %s at %s (%q) in:\n%v", w.typ, w.path, w.detail, err)
	}
}
