package security_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
)

// TestGoldenObjectsHoldNoLiteralCredential scans every object of every
// golden file of the module.
func TestGoldenObjectsHoldNoLiteralCredential(t *testing.T) {
	objs, files := goldenObjects(t)
	require.NotEmpty(t, objs)
	for _, g := range objs {
		for _, f := range scanObject(g.obj) {
			t.Errorf("%s: %s %s%s", g.file, g.obj.GetKind(), g.obj.GetName(), f)
		}
	}
	t.Logf("scanned %d objects of %d golden files", len(objs), files)
}

// TestBuilderObjectsHoldNoLiteralCredential scans what every builder
// renders with its credentials given as Secret references, on CPUs and
// on GPUs and NPUs with RDMA fabrics, and the builders without pods.
func TestBuilderObjectsHoldNoLiteralCredential(t *testing.T) {
	var ws []cube.Workload
	for _, bc := range builderCases() {
		for _, s := range []setting{
			{profile: hardware.CPU}, {profile: hardware.H100, fabric: hardware.InfiniBand()},
			{profile: hardware.Ascend910B3, fabric: hardware.RoCE()}, {profile: hardware.Ascend910B3.AscendDockerRuntime(false), fabric: hardware.RoCE()},
		} {
			ws = append(ws, bc.make(s))
		}
	}
	ws = append(ws, podlessCases()...)
	scanned := 0
	for _, w := range ws {
		objs, err := w.Objects()
		if err != nil {
			continue // a combination the builder refuses; TestEveryBuilderPodMeetsPodSecurity counts them
		}
		for _, o := range objs {
			u, err := cube.ToUnstructured(o)
			require.NoError(t, err)
			scanned++
			for _, f := range scanObject(u) {
				t.Errorf("%T: %s %s%s", w, u.GetKind(), u.GetName(), f)
			}
		}
	}
	assert.Greater(t, scanned, 200)
	t.Logf("scanned %d objects of %d workloads", scanned, len(ws))
}

// TestScanFindsEveryKindOfLiteral plants one credential of each kind the
// scan looks for, so that a scan that found nothing above means nothing
// was there.
func TestScanFindsEveryKindOfLiteral(t *testing.T) {
	obj := func(kind string, content map[string]any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: content}
		u.SetAPIVersion("v1")
		u.SetKind(kind)
		u.SetName("planted")
		return u
	}
	container := func(c map[string]any) *unstructured.Unstructured {
		c["name"] = "main"
		return obj("Pod", map[string]any{"spec": map[string]any{"containers": []any{c}}})
	}
	for name, u := range map[string]*unstructured.Unstructured{
		"hf token in an arg":       container(map[string]any{"args": []any{"--model", "hf_abcdefghijklmnopqrstuvwxyz0123456789"}}),
		"openai key in a script":   container(map[string]any{"command": []any{"sh", "-c", "curl -H 'Authorization: Bearer sk-proj-abcdefghijklmnopqrstuvwx' x"}}),
		"github token":             container(map[string]any{"args": []any{"ghp_abcdefghijklmnopqrstuvwxyz0123456789"}}),
		"aws key id":               container(map[string]any{"args": []any{"AKIAIOSFODNN7EXAMPLE"}}),
		"slack token":              container(map[string]any{"args": []any{"xoxb-1234567890-abcdefghij"}}),
		"gitlab token":             container(map[string]any{"args": []any{"glpat-abcdefghijklmnopqrst"}}),
		"jwt":                      container(map[string]any{"args": []any{"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}}),
		"--api-key literal":        container(map[string]any{"args": []any{"--api-key", "letmein123"}}),
		"--token=literal":          container(map[string]any{"args": []any{"--token=letmein123"}}),
		"--password in a script":   container(map[string]any{"command": []any{"sh", "-c", "mysql --password hunter22 db"}}),
		"env secret literal":       container(map[string]any{"env": []any{map[string]any{"name": "WANDB_API_KEY", "value": "0123456789abcdef"}}}),
		"env password literal":     container(map[string]any{"env": []any{map[string]any{"name": "DB_PASSWORD", "value": "hunter22"}}}),
		"url with user info":       container(map[string]any{"env": []any{map[string]any{"name": "DATABASE", "value": "postgres://app:hunter22@db:5432/app"}}}),
		"configmap credential key": obj("ConfigMap", map[string]any{"data": map[string]any{"api_key": "0123456789abcdef"}}),
		"configmap config file":    obj("ConfigMap", map[string]any{"data": map[string]any{"config.yaml": "server:\n  password: hunter22\n"}}),
		"private key":              obj("ConfigMap", map[string]any{"data": map[string]any{"tls": "-----BEGIN RSA PRIVATE KEY-----\nMIIE"}}),
	} {
		assert.NotEmpty(t, scanObject(u), "%s is not found", name)
	}
	// References and lookalikes are not credentials.
	for name, u := range map[string]*unstructured.Unstructured{
		"secret reference": container(map[string]any{"env": []any{map[string]any{"name": "HF_TOKEN",
			"valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "hf", "key": "token"}}}}}),
		"env reference":   container(map[string]any{"args": []any{"--api-key", "$(VLLM_API_KEY)"}}),
		"token file":      container(map[string]any{"env": []any{map[string]any{"name": "HF_TOKEN_PATH", "value": "/var/run/hf/token"}}}),
		"token counts":    obj("ConfigMap", map[string]any{"data": map[string]any{"config.json": `{"maxInputTokenLen": 8192, "tokenTimeout": 60}`}}),
		"url without one": container(map[string]any{"args": []any{"--endpoint", "http://minio.minio:9000"}}),
	} {
		assert.Empty(t, scanObject(u), "%s", name)
	}
}
