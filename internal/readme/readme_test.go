package readme_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/label/labeltest"
)

// quotedSnippets returns each snippet README.md quotes, by name: the Go
// block that follows a `<!-- snippet: NAME -->` line.
func quotedSnippets(t *testing.T, readme string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)<!-- snippet: (\\S+) -->\n```go\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		require.NotContains(t, out, m[1], "README quotes snippet %q twice", m[1])
		out[m[1]] = m[2]
	}
	return out
}

// codeRegions returns the regions between `// snippet: NAME` and
// `// end snippet` of this package's Go files, each less the indentation
// its lines share.
func codeRegions(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var name string
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "// snippet: "):
				require.Empty(t, name, "%s: snippet %q opens inside %q", f, trimmed, name)
				name, lines = strings.TrimPrefix(trimmed, "// snippet: "), nil
			case trimmed == "// end snippet":
				require.NotEmpty(t, name, "%s: end snippet without a snippet", f)
				require.NotContains(t, out, name, "snippet %q is defined twice", name)
				out[name] = dedent(lines)
				name = ""
			case name != "":
				lines = append(lines, line)
			}
		}
		require.Empty(t, name, "%s: snippet %q is not closed", f, name)
	}
	return out
}

func dedent(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if common < 0 || n < common {
			common = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		b.WriteString(strings.TrimRight(l, " \t") + "\n")
	}
	return b.String()
}

// TestREADMEQuotesTheCode holds every snippet the README quotes identical
// to the code region of the same name, which compiles and runs in this
// package's tests, and every region quoted.
func TestREADMEQuotesTheCode(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	quoted := quotedSnippets(t, string(data))
	code := codeRegions(t)
	require.NotEmpty(t, quoted)
	for name, body := range quoted {
		want, ok := code[name]
		if assert.True(t, ok, "README quotes snippet %q, which no code region holds", name) {
			assert.Equal(t, want, body, "README's snippet %q differs from the code it quotes", name)
		}
	}
	for name := range code {
		assert.Contains(t, quoted, name, "the code region %q is quoted nowhere in README", name)
	}
	for _, name := range []string{"tenant", "fine-tune", "serve", "pipeline", "rag", "cubetest"} {
		assert.Contains(t, quoted, name)
	}
}

// TestREADMECommandsAreCIs: the README's first block holds the quickstart
// and the test command, and .ci/run runs exactly that test command.
func TestREADMECommandsAreCIs(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- commands -->\n```sh\n(.*?)```").FindStringSubmatch(string(data))
	require.NotNil(t, m, "README has a <!-- commands --> block")
	var commands []string
	for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	require.Len(t, commands, 2)
	assert.Equal(t, "go run ./examples/quickstart", commands[0])
	test := commands[1]
	assert.Contains(t, test, "go test ./...")

	ci, err := os.ReadFile("../../.ci/run")
	require.NoError(t, err)
	lines := strings.Split(string(ci), "\n")
	assert.True(t, slices.Contains(lines, test+" || status=$?"),
		".ci/run runs the README's test command %q as written (followed by `|| status=$?`)", test)
}

// The snippets run on cubetest's in-memory cluster; the test plays the
// controllers where a snippet waits.

const ns = "team-nlp"

func newCluster(t *testing.T) (*cubetest.Cluster, context.Context) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return cubetest.NewCluster(nil, cube.Namespace(ns)), ctx
}

func TestTenantSnippet(t *testing.T) {
	cluster, ctx := newCluster(t)
	rel, err := tenantSnippet(ctx, cluster.Client)
	require.NoError(t, err)
	assert.Equal(t, ns, rel.Name)
	var quota corev1.ResourceQuotaList
	require.NoError(t, cluster.Fake.List(ctx, &quota, client.InNamespace(ns)))
	require.Len(t, quota.Items, 1)
	gpus := quota.Items[0].Spec.Hard["requests.nvidia.com/gpu"]
	assert.Equal(t, int64(32), gpus.Value(), "%v", quota.Items[0].Spec.Hard)
}

func TestFineTuneSnippet(t *testing.T) {
	cluster, ctx := newCluster(t)
	require.NoError(t, cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(3*time.Hour, cubetest.Succeed())))
	require.NoError(t, fineTuneSnippet(ctx, cluster.Client))
	var job kubeflowv1.PyTorchJob
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "support-sft"}, &job))
	master := job.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]
	require.NotNil(t, master)
	gpus := master.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]
	assert.Positive(t, gpus.Value(), "the plan put H100s on the job")
}

func TestServeSnippet(t *testing.T) {
	cluster, ctx := newCluster(t)
	require.NoError(t, cluster.React(cubetest.Release("qwen-chat"), cubetest.After(5*time.Minute, cubetest.Ready())))
	chat, err := serveSnippet(ctx, cluster.Client)
	require.NoError(t, err)
	assert.Equal(t, "http://qwen-chat-api.team-nlp:8000/v1", chat.BaseURL())
	var dep appsv1.Deployment
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-chat"}, &dep))
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	// vLLM serves the model under the name it was given (no --served-model-name).
	assert.Equal(t, chat.Model(), dep.Spec.Template.Spec.Containers[0].Args[0], "the client asks for the model the engine serves")
	assert.Contains(t, args, "--lora-modules support=/mnt/lora/support")
	assert.Regexp(t, regexp.MustCompile(`--tensor-parallel-size \d`), args)
}

func TestPipelineSnippet(t *testing.T) {
	cluster, ctx := newCluster(t)
	rel, err := pipelineSnippet(ctx, cluster.Client)
	require.NoError(t, err)
	assert.Equal(t, "sft-flow", rel.Name)
	var wf wfv1.Workflow
	require.NoError(t, cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sft-flow"}, &wf))
	var manifests []string
	for _, tmpl := range wf.Spec.Templates {
		if tmpl.Resource != nil {
			manifests = append(manifests, tmpl.Resource.Manifest)
		}
	}
	require.Len(t, manifests, 1)
	assert.Contains(t, manifests[0], "kind: PyTorchJob")
}

// The RAG snippet answers through a stand-in for the served adapter,
// which cites the source that holds the refund time.
func Example_rag() {
	model := labeltest.NewModel("support", func(prompt string) string {
		if strings.Contains(prompt, "[1] refunds.md") && strings.Contains(prompt, "5 business days") {
			return "Within 5 business days of the return arriving [1]."
		}
		return "I do not know."
	}, nil)
	defer model.Close()
	root, err := os.MkdirTemp("", "kbs")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	if err := ragSnippet(context.Background(), root, "testdata/handbook", model.URL); err != nil {
		panic(err)
	}
	// Output:
	// Within 5 business days of the return arriving [1].
	// [1] refunds.md — Refunds > How long a refund takes
}

// The client snippet needs no API server until it is used.
func TestClientSnippet(t *testing.T) {
	c, err := clientSnippet(&rest.Config{Host: "https://127.0.0.1:1"})
	require.NoError(t, err)
	assert.NotNil(t, c)
}
