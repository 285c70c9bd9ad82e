package label_test

// The ML backend runs on the test cluster as a team deploys it: the
// MLBackend workload with an image of cube's own program
// (label/labeltest/cmd/mlbackend, testenv.Images.LabelBackend), asking a
// model served by serve.VLLM on the stand-in engine
// (internal/testsupport/testenv/cmd/standin-engine), which stands in for vLLM: no model
// runs here. The test reaches the backend through its Service, as Label
// Studio does, and speaks Label Studio's side of the protocol (/health,
// /setup, /predict, shaped as label_studio/ml/api_connector.py sends them).
//
// The stand-in's embeddings are hashed bags of words (each lowercase word
// adds 1 at FNV-1a 64 mod 16), so Choices predicted by nearest label have a
// known answer and score; its chat answer echoes the prompt ("standin:
// ..."), which holds no answer of the shape asked for, so a TextArea
// prediction fails, naming what the model said: proof that the chat model
// was reached too.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/serve"

	"github.com/cubestudio/cube/pod"
)

// standinEmbedding is the stand-in engine's vector of text.
func standinEmbedding(text string) []float64 {
	v := make([]float64, 16)
	for _, word := range strings.Fields(strings.ToLower(text)) {
		h := fnv.New64a()
		h.Write([]byte(word))
		v[h.Sum64()%16]++
	}
	return v
}

func cosineOf(a, b []float64) float64 {
	var dot, na, nb float64
	for i := range a {
		dot += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	return dot / math.Sqrt(na*nb)
}

func TestMLBackendRunsOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns))
	require.NoError(t, err)
	ctx := t.Context()

	model := serve.VLLM("labeler-model", "standin/qwen").Namespace(ns).Image(c.Images.Standin).CPU("100m").Memory("128Mi")
	modelURL, err := serve.URL(model)
	require.NoError(t, err)
	mrel, err := cl.Apply(ctx, model)
	require.NoError(t, err)
	_, err = mrel.Wait(ctx, cube.Ready, cube.Timeout(3*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err)

	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "ml-auth", Namespace: ns},
		StringData: map[string]string{"user": "label-studio", "password": "ml-pass-123"},
	}
	require.NoError(t, c.Client.Create(ctx, secret))
	backend := label.MLBackend("labeler", c.Images.LabelBackend).Namespace(ns).
		Model(modelURL, "standin/qwen").EmbeddingModel(modelURL, "standin/qwen").
		ModelVersion("standin@1").BasicAuth(pod.SecretKeyRef{Name: "ml-auth", Key: "user"}, pod.SecretKeyRef{Name: "ml-auth", Key: "password"}).
		ImagePullPolicy(corev1.PullNever).CPU("100m").Memory("128Mi")
	brel, err := cl.Apply(ctx, backend)
	require.NoError(t, err)
	st, err := brel.Wait(ctx, cube.Ready, cube.Timeout(3*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err, "%+v", st)

	svc, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "labeler", metav1.GetOptions{})
	require.NoError(t, err)
	require.NotEmpty(t, svc.Spec.ClusterIP)
	base := "http://" + net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(label.BackendPort))
	call := func(method, path string, auth bool, body any) (int, map[string]any) {
		t.Helper()
		var in io.Reader
		if body != nil {
			data, err := json.Marshal(body)
			require.NoError(t, err)
			in = bytes.NewReader(data)
		}
		req, err := http.NewRequestWithContext(ctx, method, base+path, in)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		if auth {
			req.SetBasicAuth("label-studio", "ml-pass-123")
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var out map[string]any
		if resp.Header.Get("Content-Type") == "application/json" {
			require.NoError(t, json.Unmarshal(data, &out), string(data))
		}
		return resp.StatusCode, out
	}

	// The Service's endpoints reach kube-proxy a moment after the pod is
	// ready: ask /health until it answers. It needs no password (the
	// kubelet's probes have none).
	err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
		resp, err := http.Get(base + "/health")
		if err != nil {
			t.Logf("health: %v", err)
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	require.NoError(t, err)
	code, body := call(http.MethodGet, "/health", false, nil)
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"status": "UP", "model_class": "cube-label"}, body)

	cfg := label.TextClassification("sports", "cooking")
	cfgXML, err := cfg.XML()
	require.NoError(t, err)
	setup := map[string]any{"project": "7.1764547200", "schema": cfgXML, "hostname": "http://studio:8080", "access_token": "not-a-token"}
	code, _ = call(http.MethodPost, "/setup", false, setup)
	assert.Equal(t, http.StatusUnauthorized, code, "the Secret's basic auth is required")
	code, body = call(http.MethodPost, "/setup", true, setup)
	require.Equal(t, http.StatusOK, code, body)
	assert.Equal(t, map[string]any{"model_version": "standin@1"}, body)

	texts := []string{"football match tonight", "sourdough bread recipe"}
	predict := map[string]any{
		"tasks": []map[string]any{
			{"id": 11, "data": map[string]any{"text": texts[0]}},
			{"id": 12, "data": map[string]any{"text": texts[1]}},
		},
		"model_version": "standin@1", "project": "7.1764547200", "label_config": cfgXML,
		"params": map[string]any{"login": nil, "password": nil, "context": nil},
	}
	code, body = call(http.MethodPost, "/predict", true, predict)
	require.Equal(t, http.StatusOK, code, body)
	results, ok := body["results"].([]any)
	require.True(t, ok, "%v", body)
	require.Len(t, results, 2, "one prediction per task, in order")
	for i, want := range []string{"sports", "cooking"} {
		wantScore := cosineOf(standinEmbedding(texts[i]), standinEmbedding(want))
		other := cosineOf(standinEmbedding(texts[i]), standinEmbedding(map[string]string{"sports": "cooking", "cooking": "sports"}[want]))
		require.Greater(t, wantScore, other, "the texts are chosen so that the stand-in's vectors decide")
		pred := results[i].(map[string]any)
		assert.Equal(t, "standin@1", pred["model_version"])
		assert.InDelta(t, wantScore, pred["score"], 1e-6, "task %d", i)
		rs := pred["result"].([]any)
		require.Len(t, rs, 1, "task %d: %v", i, pred)
		assert.Equal(t, map[string]any{
			"from_name": "label", "to_name": "text", "type": "choices",
			"value": map[string]any{"choices": []any{want}}, "score": pred["score"],
		}, rs[0], "task %d", i)
	}

	// A TextArea is asked of the chat model, whose echo is no answer.
	textArea := `<View><Text name="text" value="$text"/><TextArea name="summary" toName="text"/></View>`
	predict["label_config"] = textArea
	predict["tasks"] = []map[string]any{{"id": 13, "data": map[string]any{"text": "a long day"}}}
	code, body = call(http.MethodPost, "/predict", true, predict)
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Contains(t, fmt.Sprint(body["error"]), `predict task 13: TextArea "summary": the model's answer is not the JSON asked for`)
	assert.Contains(t, fmt.Sprint(body["error"]), `standin: Write the best summary`, "the chat model was asked")
}
