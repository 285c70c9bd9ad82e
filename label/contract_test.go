package label_test

// Label Studio and label-studio-ml-backend cannot run here: these tests
// check what label renders and sends for them against contracts read from
// their source at the versions label pins (testdata/contracts), so that a
// misspelt variable, a tag attribute Label Studio does not read or an API
// field it does not take fails here rather than in a pod.

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/pod"
)

func loadContract(t *testing.T, name string) *contract.Contract {
	t.Helper()
	c, err := contract.Load("testdata/contracts/" + name + ".tsv")
	require.NoError(t, err)
	return c
}

// studioCases are every Studio configuration the package's tests and
// examples build.
func studioCases() map[string]*label.StudioServer {
	base := func() *label.StudioServer {
		return label.Studio("labels").Admin(pod.SecretKeyRef{Name: "ls-admin", Key: "email"}, pod.SecretKeyRef{Name: "ls-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "ls-admin", Key: "token"})
	}
	return map[string]*label.StudioServer{
		"sqlite":           base(),
		"host and signup":  base().Host("https://cube.example.com/labelstudio").AllowSignup(),
		"bundled postgres": base().Postgres(pod.SecretKeyRef{Name: "ls-db", Key: "password"}, "20Gi", "fast"),
		"external db":      base().ExternalDatabase("ls-external-db"),
		"storage":          base().Storage("50Gi", "standard").Host("http://labels:8080"),
	}
}

// envMap reads a container's environment as the contract sees it: a value
// from a Secret is unknown here and reads as "".
func envMap(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		out[e.Name] = e.Value
	}
	return out
}

func studioContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "label-studio" {
			return c
		}
	}
	t.Fatalf("no label-studio container in %s", d.Name)
	return corev1.Container{}
}

func TestStudioEnvMeetsLabelStudioContract(t *testing.T) {
	ls := loadContract(t, "label-studio")
	for name, s := range studioCases() {
		d, err := s.Build()
		require.NoError(t, err, name)
		c := studioContainer(t, d)
		env := envMap(c)
		assert.NoError(t, ls.CheckEnv(name, env))
		assert.NoError(t, ls.CheckImage(name, c.Image, env))
	}
}

// Every Studio of the FuzzStudio corpus that renders (its seeds, the inputs
// go test -fuzz kept, and inputs drawn from its dictionaries) meets the
// contract too.
func TestStudioCorpusMeetsLabelStudioContract(t *testing.T) {
	ls := loadContract(t, "label-studio")
	rendered := 0
	for i, in := range studioCorpus(t, 120) {
		d, err := in.studio().Build()
		if err != nil {
			continue
		}
		rendered++
		assert.NoError(t, ls.CheckEnv(fmt.Sprintf("corpus %d", i), envMap(studioContainer(t, d))))
	}
	assert.Greater(t, rendered, 10, "the corpus renders Studios to check")
}

// The checks fail on the defects they are for: a misspelt variable, a
// value Label Studio does not take, a host it ignores, a database
// variable without DJANGO_DB.
func TestLabelStudioContractCatchesDefects(t *testing.T) {
	ls := loadContract(t, "label-studio")
	d, err := studioCases()["bundled postgres"].Build()
	require.NoError(t, err)
	good := envMap(studioContainer(t, d))
	for what, mutate := range map[string]func(map[string]string){
		"is not a variable the engine reads":                 func(e map[string]string) { e["LABEL_STUDIO_PASSWROD"] = e["LABEL_STUDIO_PASSWORD"] },
		`DJANGO_DB="postgres" is not one of`:                 func(e map[string]string) { e["DJANGO_DB"] = "postgres" },
		"LABEL_STUDIO_HOST requires LABEL_STUDIO_HOST=http*": func(e map[string]string) { e["LABEL_STUDIO_HOST"] = "labels.example.com" },
		"POSTGRE_HOST requires DJANGO_DB":                    func(e map[string]string) { delete(e, "DJANGO_DB") },
		`LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK="enabled"`: func(e map[string]string) { e["LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK"] = "enabled" },
	} {
		env := maps.Clone(good)
		mutate(env)
		err := ls.CheckEnv("mutated", env)
		require.Error(t, err, what)
		assert.Contains(t, err.Error(), what)
	}
	assert.ErrorContains(t, ls.CheckImage("other image", "heartexlabs/label-studio:latest", good), "nothing is recorded of image")
}

// configCases are the presets and the configurations the tests build.
func configCases() map[string]*label.Config {
	return map[string]*label.Config{
		"text classification":  label.TextClassification("pos", "neg"),
		"multi label":          label.MultiLabel("a", "b", "c"),
		"named entities":       label.NamedEntities("PER", "ORG"),
		"question answering":   label.QuestionAnswering(),
		"image classification": label.ImageClassification("cat", "dog"),
		"image boxes":          label.ImageBoxes("car"),
		"pairwise ranking":     label.PairwiseRanking(),
		"response rating":      label.ResponseRating(5),
		"everything": label.NewConfig().Header("Review").Text("t", "text").Image("img", "image").
			Choices("c", "t", label.Multiple, "x", "y").Labels("l", "t", "A").RectangleLabels("r", "img", "B").
			Rating("s", "t", 10).TextArea("ta", "t").Text("u", "other").Pairwise("p", "t", "u"),
	}
}

// configElements reads rendered XML as the contract sees it: for each
// element, "tag" and "<Tag>.<attribute>" to its value.
func configElements(t *testing.T, x string) []map[string]string {
	t.Helper()
	var out []map[string]string
	dec := xml.NewDecoder(strings.NewReader(x))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		if se, ok := tok.(xml.StartElement); ok {
			el := map[string]string{"tag": se.Name.Local}
			for _, a := range se.Attr {
				el[se.Name.Local+"."+a.Name.Local] = a.Value
			}
			out = append(out, el)
		}
	}
}

func checkConfig(ls *contract.Contract, what string, els []map[string]string) error {
	var errs []error
	for i, el := range els {
		w := fmt.Sprintf("%s: element %d <%s>", what, i, el["tag"])
		errs = append(errs, ls.CheckKeys(w, el), ls.CheckSet(w, el["tag"], slices.Collect(maps.Keys(el))))
	}
	return errors.Join(errs...)
}

func TestConfigsMeetLabelStudioContract(t *testing.T) {
	ls := loadContract(t, "label-studio")
	for name, cfg := range configCases() {
		x, err := cfg.XML()
		require.NoError(t, err, name)
		assert.NoError(t, checkConfig(ls, name, configElements(t, x)))
	}
	// A misspelt attribute, a choice mode Label Studio does not have, a
	// control without toName and a tag it does not know fail.
	x, err := label.TextClassification("a").XML()
	require.NoError(t, err)
	for what, mutate := range map[string]func(string) string{
		"Choices.choise is not a key":        func(s string) string { return strings.Replace(s, "choice=", "choise=", 1) },
		`Choices.choice="one" is not one of`: func(s string) string { return strings.Replace(s, `choice="single"`, `choice="one"`, 1) },
		"Choices lacks Choices.toName":       func(s string) string { return strings.Replace(s, `toName="text"`, "", 1) },
		`tag="Texts" is not one of`: func(s string) string {
			return strings.NewReplacer("<Text ", "<Texts ", "</Text>", "</Texts>").Replace(s)
		},
		"Text.valu is not a key the engine rea": func(s string) string { return strings.Replace(s, `value="$text"`, `valu="$text"`, 1) },
	} {
		err := checkConfig(ls, "mutated", configElements(t, mutate(x)))
		require.Error(t, err, what)
		assert.Contains(t, err.Error(), what)
	}
}

// flatten reads a JSON request or answer as "prefix.key" to its scalar
// text; a list of objects is read item by item as "prefix.key[]." (or
// "result." for results, which the contract names once for every call).
func flatten(prefix string, body []byte, cfg []map[string]string) []map[string]string {
	var obj map[string]any
	if json.Unmarshal(body, &obj) != nil {
		return cfg
	}
	top := map[string]string{}
	for k, v := range obj {
		top[prefix+"."+k] = scalar(v)
		list, _ := v.([]any)
		for _, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			itemPrefix := prefix + "." + k + "[]"
			if k == "result" {
				itemPrefix = "result"
			}
			b, _ := json.Marshal(m)
			cfg = flatten(itemPrefix, b, cfg)
		}
	}
	return append(cfg, top)
}

func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case nil:
		return ""
	case map[string]any, []any:
		return "" // structure: its keys are read separately
	}
	return fmt.Sprint(v)
}

// recorder answers every call with {} and keeps each body by call.
type recorder struct {
	mu     sync.Mutex
	bodies map[string][][]byte
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	call := ""
	switch p := req.URL.Path; {
	case p == "/api/projects/" || strings.HasPrefix(p, "/api/projects/") && req.Method == http.MethodPatch:
		call = "project"
	case p == "/api/predictions/":
		call = "prediction"
	case strings.HasSuffix(p, "/annotations/"):
		call = "annotation"
	case p == "/api/ml/":
		call = "ml"
	case p == "/api/webhooks/":
		call = "webhook"
	case p == "/api/storages/s3/":
		call = "s3"
	}
	r.mu.Lock()
	r.bodies[call] = append(r.bodies[call], b)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write([]byte("{}"))
}

func ptrTo[T any](v T) *T { return &v }

func TestClientRequestsMeetLabelStudioContract(t *testing.T) {
	ls := loadContract(t, "label-studio")
	rec := &recorder{bodies: map[string][][]byte{}}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	c, err := label.NewClient(srv.URL, label.Token("t"))
	require.NoError(t, err)
	ctx := t.Context()
	score := 0.7
	results := []label.Result{
		{FromName: "label", ToName: "text", Type: "choices", Value: label.Value{Choices: []string{"pos"}}, Score: &score},
		{ID: "r1", FromName: "entities", ToName: "text", Type: "labels", Value: label.Value{Start: ptrTo(0), End: ptrTo(3), Span: "Zoë", Labels: []string{"PER"}}},
		{FromName: "boxes", ToName: "image", Type: "rectanglelabels", OriginalWidth: 640, OriginalHeight: 480,
			Value: label.Value{Box: &label.Box{X: 1, Y: 2, Width: 3, Height: 4}, RectangleLabels: []string{"car"}}},
		{FromName: "rating", ToName: "response", Type: "rating", Value: label.Value{Rating: 4}},
		{FromName: "correction", ToName: "response", Type: "textarea", Value: label.Value{Lines: []string{"better"}}},
		{FromName: "preference", ToName: "answer_a", Type: "pairwise", Value: label.Value{Selected: "left"}},
	}
	_, err = c.CreateProject(ctx, "alpha", "d", label.TextClassification("pos", "neg"))
	require.NoError(t, err)
	_, err = c.UpdateProject(ctx, 1, "beta", "e", label.MultiLabel("x"))
	require.NoError(t, err)
	_, err = c.CreatePrediction(ctx, label.Prediction{Task: 1, Result: results, Score: 0.5, ModelVersion: "v1"})
	require.NoError(t, err)
	_, err = c.CreateAnnotation(ctx, 1, label.Annotation{Result: results, CompletedBy: 2, GroundTruth: true, LeadTime: 3.5, WasCancelled: true})
	require.NoError(t, err)
	_, err = c.CreateWebhook(ctx, label.Webhook{Project: 1, URL: "http://hook/", SendPayload: true, Actions: []string{"ANNOTATION_CREATED"}, Headers: map[string]string{"X-Key": "v"}, IsActive: true})
	require.NoError(t, err)
	require.NoError(t, c.ConnectBackend(ctx, 1, "llm", "http://b:9090", true))
	require.NoError(t, c.ConnectBackend(ctx, 1, "llm", "http://b:9090", false, label.BackendBasicAuth("u", "p")))
	_, err = c.ConnectS3(ctx, label.S3Storage{Project: 1, Title: "s", Bucket: "data", Prefix: "in", RegexFilter: ".*",
		UseBlobURLs: true, Presign: true, PresignTTL: 5, RecursiveScan: true, RegionName: "us-east-1", S3Endpoint: "http://minio:9000"})
	require.NoError(t, err)

	calls := slices.Sorted(maps.Keys(rec.bodies))
	assert.Equal(t, []string{"annotation", "ml", "prediction", "project", "s3", "webhook"}, calls, "every call was recorded")
	for _, call := range calls {
		for i, body := range rec.bodies[call] {
			for _, cfg := range flatten(call, body, nil) {
				assert.NoError(t, ls.CheckKeys(fmt.Sprintf("%s %d", call, i), cfg))
			}
		}
	}
	// The check fails on a field Label Studio does not take and on basic
	// auth without its user.
	assert.ErrorContains(t, ls.CheckKeys("mutated", map[string]string{"ml.auth": "BASIC_AUTH"}), "ml.auth is not a key")
	assert.ErrorContains(t, ls.CheckKeys("mutated", map[string]string{"ml.auth_method": "BASIC_AUTH"}), "ml.auth_method=BASIC_AUTH requires ml.basic_auth_user")
	assert.ErrorContains(t, ls.CheckKeys("mutated", map[string]string{"ml.auth_method": "BA"}), `ml.auth_method="BA" is not one of NONE,BASIC_AUTH`)
}

// mlBackendCases are every MLBackend configuration the tests and examples
// build.
func mlBackendCases() map[string]*label.MLBackendServer {
	base := func() *label.MLBackendServer {
		return label.MLBackend("llm-backend", "registry.example.com/cube/label-backend:1").Model("http://qwen.team-a.svc:8000/v1", "qwen")
	}
	return map[string]*label.MLBackendServer{
		"plain":      base(),
		"basic auth": base().BasicAuth(pod.SecretKeyRef{Name: "backend-auth", Key: "user"}, pod.SecretKeyRef{Name: "backend-auth", Key: "password"}),
		"everything": base().APIKey(pod.SecretKeyRef{Name: "model-key", Key: "key"}).EmbeddingModel("http://bge.team-a.svc:8080/v1", "bge").
			ModelVersion("v2").Replicas(2).BasicAuth(pod.SecretKeyRef{Name: "backend-auth", Key: "user"}, pod.SecretKeyRef{Name: "backend-auth", Key: "password"}),
	}
}

// cubeOwnEnv are the variables of an MLBackend that cube's own program
// reads (BackendFromEnv), which label-studio-ml-backend does not.
var cubeOwnEnv = []string{label.EnvModelURL, label.EnvModelAPIKey, label.EnvModel, label.EnvEmbedURL, label.EnvEmbedModel, label.EnvModelVersion}

func TestMLBackendMeetsMLBackendContract(t *testing.T) {
	ml := loadContract(t, "label-studio-ml")
	for name, m := range mlBackendCases() {
		objs, err := m.Objects()
		require.NoError(t, err, name)
		d := objs[len(objs)-1].(*appsv1.Deployment)
		env := envMap(d.Spec.Template.Spec.Containers[0])
		for _, k := range cubeOwnEnv {
			delete(env, k)
		}
		assert.NoError(t, ml.CheckEnv(name, env))
	}
	// A misspelt variable and a user without a password fail.
	err := ml.CheckEnv("mutated", map[string]string{"BASIC_AUTH_USER": "", "BASIC_AUTH_PASSWORD": ""})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "BASIC_AUTH_PASSWORD is not a variable the engine reads")
	assert.Contains(t, err.Error(), "BASIC_AUTH_USER requires BASIC_AUTH_PASS")
}

// prefixOf is the part of cfg's keys before their last dot: the object
// flatten read them from.
func prefixOf(cfg map[string]string) string {
	for k := range cfg {
		return k[:max(0, strings.LastIndex(k, "."))]
	}
	return ""
}

func TestBackendProtocolMeetsMLBackendContract(t *testing.T) {
	ml := loadContract(t, "label-studio-ml")
	// The results of a prediction are Label Studio's, which keeps them.
	ls := loadContract(t, "label-studio")
	b, _ := newBackend(t)
	x, err := label.NamedEntities("PER").XML()
	require.NoError(t, err)
	// Each request carries the keys label-studio-ml-backend's routes read
	// (and Label Studio sends); it is checked too, so that the test's
	// requests stay what the engine's protocol is.
	requests := []struct{ route, method string }{{"health", http.MethodGet}, {"setup", http.MethodPost}, {"predict", http.MethodPost}, {"webhook", http.MethodPost}, {"webhook", http.MethodPost}}
	bodies := []map[string]any{
		nil,
		{"project": "1.1718800000", "schema": x, "hostname": "http://studio:8080", "access_token": "t", "model_version": "", "extra_params": nil},
		{"tasks": []any{map[string]any{"id": 1, "data": map[string]any{"text": "Zoë joined Tencent."}}}, "model_version": "", "project": "1.1718800000",
			"label_config": x, "params": map[string]any{"login": nil, "password": nil, "context": nil}},
		{"action": "ANNOTATION_CREATED", "project": map[string]any{"id": 1, "label_config": x}, "annotation": map[string]any{"id": 1}},
		{"action": "PROJECT_UPDATED", "project": map[string]any{"id": 1, "label_config": x}},
	}
	for i, r := range requests {
		var body io.Reader
		if bodies[i] != nil {
			raw, err := json.Marshal(bodies[i])
			require.NoError(t, err)
			for _, cfg := range flatten(r.route+".request", raw, nil) {
				assert.NoError(t, ml.CheckKeys(r.route+" request", cfg))
			}
			body = strings.NewReader(string(raw))
		}
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, httptest.NewRequest(r.method, "/"+r.route, body))
		require.Less(t, rec.Code, 300, "%s: %s", r.route, rec.Body)
		seen := map[string]bool{}
		for _, cfg := range flatten(r.route+".response", rec.Body.Bytes(), nil) {
			what := r.route + " response"
			prefix := prefixOf(cfg)
			seen[prefix] = true
			if prefix == "result" {
				assert.NoError(t, ls.CheckKeys(what, cfg))
				continue
			}
			assert.NoError(t, ml.CheckKeys(what, cfg))
			if _, ok := ml.Fact(contract.Set, prefix); ok {
				assert.NoError(t, ml.CheckSet(what, prefix, slices.Collect(maps.Keys(cfg))))
			}
		}
		if r.route == "predict" {
			assert.True(t, seen["result"] && seen["predict.response.results[]"], "the prediction holds results: %s", rec.Body)
		}
	}
	assert.ErrorContains(t, ml.CheckKeys("mutated", map[string]string{"predict.response.predictions": ""}), "predict.response.predictions is not a key")
}

// The ML backend is tested with requests shaped as Label Studio sends them
// (label_studio/ml/api_connector.py at 1.13.1, and the request documented
// in label-studio-ml-backend's label_studio_ml/api.py: /predict gets
// {tasks, model_version, project, label_config, params}, /setup gets
// {project, schema, hostname, access_token, model_version, extra_params}),
// and a stand-in OpenAI-compatible model (labeltest.Model): no LLM runs
// here.

// answer plays a chat model: it reads the prompt cube sends and answers in
// the JSON asked for.
func answer(prompt string) string {
	switch {
	case strings.Contains(prompt, "Choose exactly one"):
		if strings.Contains(prompt, "awful") {
			return `Sure! {"choices": ["Negative"], "score": 0.8}`
		}
		return `{"choices": ["positive"], "score": 0.95}`
	case strings.Contains(prompt, "Mark the spans"):
		return `{"spans": [{"text": "Zoë", "label": "PER", "score": 0.9}, {"text": "Tencent", "label": "ORG"}, {"text": "nowhere", "label": "ORG"}]}`
	case strings.Contains(prompt, "Which is better"):
		return `{"selected": "right", "score": 0.7}`
	case strings.Contains(prompt, "Rate"):
		return `{"rating": 4, "score": 0.6}`
	case strings.Contains(prompt, "Write the best"):
		return `{"text": "a better answer"}`
	}
	return "no idea"
}

func newBackend(t *testing.T, opts ...label.BackendOption) (*label.Backend, *labeltest.Model) {
	t.Helper()
	m := labeltest.NewModel("qwen", answer, nil)
	t.Cleanup(m.Close)
	chat, err := inference.NewClient(m.URL)
	require.NoError(t, err)
	b, err := label.NewBackend(chat, opts...)
	require.NoError(t, err)
	return b, m
}

func post(t *testing.T, h http.Handler, path string, body any) (int, map[string]any) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(data)))
	var out map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &out), rec.Body.String())
	return rec.Code, out
}

func TestBackendProtocol(t *testing.T) {
	b, _ := newBackend(t, label.ModelVersion("qwen@2026-12"))
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"status": "UP", "model_class": "cube-label"}`, rec.Body.String())

	cfgXML, err := label.TextClassification("positive", "negative").XML()
	require.NoError(t, err)
	code, body := post(t, b, "/setup", map[string]any{"project": "3.1733011200", "schema": cfgXML, "hostname": "http://studio:8080", "access_token": "x", "model_version": "", "extra_params": nil})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, map[string]any{"model_version": "qwen@2026-12"}, body)

	code, body = post(t, b, "/predict", map[string]any{
		"tasks":         []map[string]any{{"id": 7, "data": map[string]any{"text": "great film"}}, {"id": 8, "data": map[string]any{"text": "awful film"}}},
		"model_version": "", "project": "3.1733011200", "label_config": cfgXML,
		"params": map[string]any{"login": nil, "password": nil, "context": nil},
	})
	require.Equal(t, http.StatusOK, code, body)
	results := body["results"].([]any)
	require.Len(t, results, 2)
	first := results[0].(map[string]any)
	assert.Equal(t, "qwen@2026-12", first["model_version"])
	assert.InDelta(t, 0.95, first["score"], 1e-9)
	r0 := first["result"].([]any)[0].(map[string]any)
	assert.Equal(t, map[string]any{"from_name": "label", "to_name": "text", "type": "choices", "value": map[string]any{"choices": []any{"positive"}}, "score": 0.95}, r0)
	second := results[1].(map[string]any)["result"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{"negative"}, second["value"].(map[string]any)["choices"], "the option's own spelling")

	code, body = post(t, b, "/webhook", map[string]any{"action": "PROJECT_UPDATED", "project": map[string]any{"id": 3}})
	assert.Equal(t, http.StatusOK, code)
	assert.Equal(t, "Unknown event", body["status"])

	code, body = post(t, b, "/predict", map[string]any{"tasks": []any{}, "label_config": "<View><Video name='v' value='$v'/></View>"})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["error"], `Unsupported value: "Video"`)
}

func TestBackendWebhookAndAuth(t *testing.T) {
	var got []string
	b, _ := newBackend(t, label.BasicAuth("ls", "pw"), label.OnWebhook(func(_ context.Context, action string, payload json.RawMessage) error {
		got = append(got, action+" "+string(payload))
		return nil
	}))
	// /health answers without the password: the kubelet probes it.
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	for _, path := range []string{"/setup", "/predict", "/webhook"} {
		rec = httptest.NewRecorder()
		b.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(`{}`)))
		assert.Equal(t, http.StatusUnauthorized, rec.Code, path)
		assert.Equal(t, `Basic realm="Login required"`, rec.Header().Get("WWW-Authenticate"))
	}
	req := httptest.NewRequest(http.MethodPost, "/webhook", strings.NewReader(`{"action": "ANNOTATION_CREATED", "project": {"id": 1}, "annotation": {"id": 9}}`))
	req.SetBasicAuth("ls", "pw")
	rec = httptest.NewRecorder()
	b.ServeHTTP(rec, req)
	assert.Equal(t, http.StatusCreated, rec.Code)
	assert.Equal(t, []string{`ANNOTATION_CREATED {"annotation":{"id":9},"project":{"id":1}}`}, got)

	// A failing handler is a 500, as an exception out of webhook() in
	// label_studio_ml/api.py is.
	failing, _ := newBackend(t, label.OnWebhook(func(context.Context, string, json.RawMessage) error { return errors.New("disk full") }))
	code, body := post(t, failing, "/webhook", map[string]any{"action": "START_TRAINING", "project": map[string]any{"id": 1}})
	assert.Equal(t, http.StatusInternalServerError, code)
	assert.Equal(t, "webhook START_TRAINING: disk full", body["error"])
	code, body = post(t, failing, "/webhook", map[string]any{"project": map[string]any{"id": 1}})
	assert.Equal(t, http.StatusBadRequest, code)
	assert.Contains(t, body["error"], "webhook: action")
	rec = httptest.NewRecorder()
	failing.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{}`, rec.Body.String())

	_, err := label.NewBackend(nil, label.BasicAuth("only-user", ""))
	assert.ErrorContains(t, err, "chat: Required value")
	assert.ErrorContains(t, err, "basicAuth: Required value")
	var nilBackend *label.Backend
	_, err = nilBackend.Predict(t.Context(), label.TextClassification("a"), nil)
	assert.ErrorContains(t, err, "the *Backend is nil")
}

func TestBackendPredictsEveryControl(t *testing.T) {
	b, _ := newBackend(t)
	text := "Zoë joined Tencent."
	preds, err := b.Predict(t.Context(), label.NamedEntities("PER", "ORG"), []label.Task{{ID: 1, Data: map[string]any{"text": text}}})
	require.NoError(t, err)
	require.Len(t, preds[0].Result, 2, "the made-up span is dropped")
	per := preds[0].Result[0].Value
	assert.Equal(t, 0, *per.Start)
	assert.Equal(t, 3, *per.End, "UTF-16 offsets, as the browser counts them")
	org := preds[0].Result[1]
	assert.Equal(t, 11, *org.Value.Start)
	assert.Equal(t, "Tencent", text[12:19], "byte offsets differ: ë is two bytes")
	assert.InDelta(t, 0.5, *org.Score, 1e-9, "no confidence given: undecided")
	assert.InDelta(t, 0.7, preds[0].Score, 1e-9)
	assert.Equal(t, "qwen", preds[0].ModelVersion, "default version: the served model")

	preds, err = b.Predict(t.Context(), label.PairwiseRanking(), []label.Task{{ID: 2, Data: map[string]any{"prompt": "p", "answer_a": "a", "answer_b": "b"}}})
	require.NoError(t, err)
	assert.Equal(t, "right", preds[0].Result[0].Value.Selected)

	preds, err = b.Predict(t.Context(), label.ResponseRating(5), []label.Task{{ID: 3, Data: map[string]any{"prompt": "p", "response": "r"}}})
	require.NoError(t, err)
	require.Len(t, preds[0].Result, 2)
	assert.Equal(t, 4, preds[0].Result[0].Value.Rating)
	assert.Equal(t, []string{"a better answer"}, preds[0].Result[1].Value.Lines)

	preds, err = b.Predict(t.Context(), label.ImageClassification("cat"), []label.Task{{ID: 4, Data: map[string]any{"image": "s3://b/cat.png"}}})
	require.NoError(t, err)
	assert.Empty(t, preds[0].Result, "a chat model does not see images")

	_, err = b.Predict(t.Context(), label.NewConfig(), nil)
	assert.ErrorContains(t, err, "predict: tags: Required value")
}

func TestBackendNearestLabel(t *testing.T) {
	vec := map[string][]float32{"positive": {1, 0}, "negative": {0, 1}, "so good": {0.9, 0.1}}
	em := labeltest.NewModel("bge", nil, func(in string) []float32 { return vec[in] })
	t.Cleanup(em.Close)
	b, m := newBackend(t, label.Embeddings(mustClient(t, em.URL)))
	preds, err := b.Predict(t.Context(), label.TextClassification("positive", "negative"), []label.Task{{ID: 1, Data: map[string]any{"text": "so good"}}})
	require.NoError(t, err)
	assert.Equal(t, []string{"positive"}, preds[0].Result[0].Value.Choices)
	assert.InDelta(t, 0.9/0.9055385, *preds[0].Result[0].Score, 1e-6, "cosine similarity")
	assert.Empty(t, m.Prompts(), "the chat model is not asked")
}

func TestPreannotateProject(t *testing.T) {
	c, _ := newClient(t)
	b, _ := newBackend(t, label.ModelVersion("v1"))
	p, err := c.CreateProject(t.Context(), "sentiment", "", label.TextClassification("positive", "negative"))
	require.NoError(t, err)
	_, err = c.ImportTasks(t.Context(), p.ID, []label.Task{
		{Data: map[string]any{"text": "nice"}},
		{Data: map[string]any{"text": "awful"}},
		{Data: map[string]any{"text": "done"}, Predictions: []label.Prediction{{Result: []label.Result{}, ModelVersion: "v1"}}},
	})
	require.NoError(t, err)
	res, err := label.Preannotate(t.Context(), c, p.ID, b)
	require.NoError(t, err)
	assert.Equal(t, label.PreannotateResult{Predicted: 2, Skipped: 1}, res)
	tasks, err := c.ListTasks(t.Context(), p.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"negative"}, tasks[1].Predictions[0].Result[0].Value.Choices)
	assert.Equal(t, "v1", tasks[1].Predictions[0].ModelVersion)
	again, err := label.Preannotate(t.Context(), c, p.ID, b)
	require.NoError(t, err)
	assert.Equal(t, label.PreannotateResult{Skipped: 3}, again, "idempotent per model version")

	_, err = label.Preannotate(t.Context(), c, 999, b)
	assert.ErrorContains(t, err, "preannotate project 999: label studio get project")
}

func mustClient(t *testing.T, url string) *inference.Client {
	t.Helper()
	c, err := inference.NewClient(url)
	require.NoError(t, err)
	return c
}

func TestMLBackendWorkload(t *testing.T) {
	objs, err := label.MLBackend("qwen-labeler", "registry.local/labeler:1").Namespace("team-a").
		Model("http://qwen-chat:8000/v1", "qwen").APIKey(pod.SecretKeyRef{Name: "qwen", Key: "key"}).BasicAuth(pod.SecretKeyRef{Name: "ml", Key: "user"}, pod.SecretKeyRef{Name: "ml", Key: "pass"}).ModelVersion("qwen@1").Objects()
	require.NoError(t, err)
	svc := objs[0].(*corev1.Service)
	assert.Equal(t, int32(label.BackendPort), svc.Spec.Ports[0].Port)
	d := objs[1].(*appsv1.Deployment)
	env := envOf(d.Spec.Template.Spec.Containers[0])
	assert.Equal(t, "http://qwen-chat:8000/v1", env[label.EnvModelURL].Value)
	assert.Equal(t, "qwen", env[label.EnvModel].Value)
	assert.Equal(t, "qwen@1", env[label.EnvModelVersion].Value)
	assert.Equal(t, "qwen/key", secretOf(t, env[label.EnvModelAPIKey]))
	assert.Equal(t, "ml/pass", secretOf(t, env[label.EnvBasicPass]))
	assert.Equal(t, "/health", d.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "http://qwen-labeler.team-a.svc:9090", label.BackendURL("qwen-labeler", "team-a"))

	_, err = label.MLBackend("x", "").Model("http://u:p@h", "").Replicas(0).EmbeddingModel("::", "").Objects()
	for _, want := range []string{"model.endpoint: Invalid value", "model.servedModel: Required value", "replicas: Invalid value: 0", "image: Required value", "embeddingModel.endpoint: Invalid value"} {
		assert.ErrorContains(t, err, want)
	}
	assert.NotContains(t, err.Error(), "u:p@")
	var nilM *label.MLBackendServer
	_, err = nilM.Model("a", "b").Objects()
	assert.ErrorContains(t, err, "the *MLBackendServer is nil")
}

func TestBackendFromEnv(t *testing.T) {
	m := labeltest.NewModel("qwen", answer, nil)
	t.Cleanup(m.Close)
	t.Setenv(label.EnvModelURL, m.URL+"/v1")
	t.Setenv(label.EnvModel, "qwen")
	t.Setenv(label.EnvModelVersion, "from-env")
	b, err := label.BackendFromEnv()
	require.NoError(t, err)
	assert.Equal(t, "from-env", b.Version(t.Context()))
	t.Setenv(label.EnvModelURL, "")
	_, err = label.BackendFromEnv()
	assert.ErrorContains(t, err, "OPENAI_BASE_URL")
}

// Zero values and nil receivers return errors, never panic.
func TestZeroValuesDoNotPanic(t *testing.T) {
	_, err := (&label.Client{}).ListProjects(t.Context())
	assert.ErrorContains(t, err, "nil or zero")
	assert.Equal(t, "label.Client(nil)", (&label.Client{}).String())

	_, err = (&label.Backend{}).Predict(t.Context(), label.TextClassification("a"), nil)
	assert.ErrorContains(t, err, "has no chat model")
	rec := httptest.NewRecorder()
	(&label.Backend{}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/health", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
	_, err = label.Preannotate(t.Context(), nil, 1, nil)
	assert.ErrorContains(t, err, "the *Backend is nil")

	_, err = (&label.MLBackendServer{}).Objects()
	assert.ErrorContains(t, err, "metadata.name: Required value")
	var nilRecords *label.Records
	assert.Zero(t, nilRecords.Len())
	var nilCfg *label.Config
	assert.Nil(t, nilCfg.Tags())
	_, ok := nilCfg.Control("x")
	assert.False(t, ok)
}

func TestBackendRefusesBadBodies(t *testing.T) {
	b, _ := newBackend(t)
	for path, body := range map[string]string{"/predict": "{", "/setup": "[", "/webhook": "nope"} {
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, strings.NewReader(body)))
		assert.Equal(t, http.StatusBadRequest, rec.Code, path)
		assert.Contains(t, rec.Body.String(), `"error"`, path)
	}
	rec := httptest.NewRecorder()
	b.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/train", nil))
	assert.Equal(t, http.StatusNotFound, rec.Code)
}

// An empty or cut-short label_config says so and names the field, rather
// than passing on encoding/xml's bare "EOF".
func TestParseConfigSaysWhatIsWrong(t *testing.T) {
	for in, want := range map[string]string{
		"":                                  "label_config: Required value: empty",
		" \n\t":                             "label_config: Required value: empty",
		`<View><Text name="t" value="$t"/>`: "label_config: Invalid value: \"<View><Text name=\\\"t\\\" value=\\\"$t\\\"/>\": truncated: <View> is not closed",
		`<View><Text name="t`:               "label_config: Invalid value",
		`not xml`:                           "label_config: Invalid value: \"not xml\": no <View> element",
	} {
		_, err := label.ParseConfig(in)
		require.Error(t, err, "%q", in)
		assert.Contains(t, err.Error(), want, "%q", in)
		assert.NotRegexp(t, `: (unexpected )?EOF$`, err.Error(), "%q", in)
	}
}

// A size problem is reported once under its field: the bundled database's
// claim is postgres.size, not postgres.size.size.
func TestStudioSizeErrorsNameTheFieldOnce(t *testing.T) {
	s := label.Studio("labels").Admin(pod.SecretKeyRef{Name: "admin", Key: "email"}, pod.SecretKeyRef{Name: "admin", Key: "pw"}).Token(pod.SecretKeyRef{Name: "admin", Key: "token"}).
		Storage("lots", "").Postgres(pod.SecretKeyRef{Name: "db", Key: "pw"}, "-1Gi", "")
	_, err := s.Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "postgres.size: ")
	assert.Contains(t, err.Error(), "storage.size: ")
	assert.NotContains(t, err.Error(), "size.size")
}

// hostileURLs carry a password the errors must not repeat: a scheme
// Label Studio does not read, a port that does not parse, an escape that
// does not decode, a space.
var hostileURLs = []string{
	"ftp://user:s3cr3t@host/x",
	"http://user:s3cr3t@host:port/x",
	"http://user:s3cr3t@host/%zz",
	"http://user:s3cr3t@host/a b",
	"https://user:s3cr3t@host",
	"//user:s3cr3t@host",
	"user:s3cr3t@host",
}

// Every URL cube takes (Label Studio's base URL and host, the ML backend's
// model endpoints and connection, webhooks, S3 endpoints) is refused when
// it carries credentials, and the refusal never repeats the password.
func TestURLsWithCredentialsAreRefusedWithoutEcho(t *testing.T) {
	c, srv := newClient(t)
	for _, u := range hostileURLs {
		var errs []error
		_, err := label.NewClient(u, label.Token("t"))
		errs = append(errs, err)
		_, err = label.Studio("labels").Admin(pod.SecretKeyRef{Name: "admin", Key: "email"}, pod.SecretKeyRef{Name: "admin", Key: "pw"}).Token(pod.SecretKeyRef{Name: "admin", Key: "token"}).Host(u).Objects()
		errs = append(errs, err)
		_, err = label.MLBackend("b", "img").Model(u, "m").Objects()
		errs = append(errs, err)
		_, err = label.MLBackend("b", "img").Model("http://model:8000/v1", "m").EmbeddingModel(u, "e").Objects()
		errs = append(errs, err)
		errs = append(errs, c.ConnectBackend(t.Context(), 1, "b", u, false))
		_, err = c.CreateWebhook(t.Context(), label.Webhook{Project: 1, URL: u, SendForAllActions: true})
		errs = append(errs, err)
		_, err = c.ConnectS3(t.Context(), label.S3Storage{Project: 1, Bucket: "data", RegexFilter: ".*", S3Endpoint: u})
		errs = append(errs, err)
		for i, err := range errs {
			require.Error(t, err, "%d: %s", i, u)
			assert.NotContains(t, err.Error(), "s3cr3t", "%d: %s", i, u)
		}
	}
	assert.Empty(t, srv.Requests(), "nothing is sent")
}

// An S3 storage is checked before Label Studio sees it: a bucket that is
// a URL, an endpoint that is not one, a negative presign TTL.
func TestConnectS3RefusesWhatLabelStudioWouldNot(t *testing.T) {
	c, srv := newClient(t)
	_, err := c.ConnectS3(t.Context(), label.S3Storage{Project: 1, Bucket: "s3://data/x", RegexFilter: ".*",
		S3Endpoint: "minio:9000", PresignTTL: -5})
	require.Error(t, err)
	for _, want := range []string{`bucket: Invalid value: "s3://data/x"`, `s3Endpoint: Invalid value: "minio:9000"`, "presignTTL: Invalid value: -5"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Empty(t, srv.Requests())
}

// A prediction's score must be a number JSON can carry and Label Studio
// can sort by; NaN and infinities are refused by name before the call.
func TestCreatePredictionRefusesNonFiniteScores(t *testing.T) {
	c, srv := newClient(t)
	for _, s := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		_, err := c.CreatePrediction(t.Context(), label.Prediction{Task: 1, Result: []label.Result{}, Score: s})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "score: Invalid value")
	}
	assert.Empty(t, srv.Requests())
}

// A negative MinRating would make every rated response desirable; it is
// refused, naming the field.
func TestExportsRefuseNegativeMinRating(t *testing.T) {
	_, err := label.SFT(nil, datasets.Alpaca, label.ResponseFields{MinRating: -1})
	assert.ErrorContains(t, err, "minRating: Invalid value: -1")
	_, err = label.KTO(nil, datasets.Alpaca, label.ResponseFields{MinRating: -3})
	assert.ErrorContains(t, err, "minRating: Invalid value: -3")
}

// Nil and zero receivers of every exported type answer with an error or
// a zero result, never a panic.
func TestNilAndZeroReceiversDoNotPanic(t *testing.T) {
	var r *label.Records
	assert.NotPanics(t, func() { _ = r.Dataset("d", "pvc://c/d.json") })
	assert.Error(t, r.WriteJSON(&strings.Builder{}))
	recs, err := label.SFT(nil, datasets.Alpaca, label.ResponseFields{})
	require.NoError(t, err)
	assert.ErrorContains(t, recs.WriteJSON(nil), "writer")

	var c *label.Client
	_, err = c.ListTasks(t.Context(), 1)
	assert.ErrorContains(t, err, "nil or zero")
	assert.ErrorContains(t, c.ConnectBackend(t.Context(), 1, "b", "http://b:9090", false), "nil or zero")

	var s *label.StudioServer
	assert.Nil(t, s.Admin(pod.SecretKeyRef{Name: "a", Key: "b"}, pod.SecretKeyRef{Name: "a", Key: "c"}).Token(pod.SecretKeyRef{Name: "a", Key: "b"}).Host("http://x").Postgres(pod.SecretKeyRef{Name: "a", Key: "b"}, "1Gi", "").AllowSignup().ExternalDatabase("x").Storage("1Gi", ""))
	_, err = s.Build()
	assert.ErrorContains(t, err, "nil")
	_, err = (&label.StudioServer{}).Objects()
	assert.Error(t, err)

	var m *label.MLBackendServer
	assert.Nil(t, m.Model("u", "m").EmbeddingModel("u", "m").ModelVersion("v").Replicas(2).APIKey(pod.SecretKeyRef{Name: "s", Key: "k"}).BasicAuth(pod.SecretKeyRef{Name: "s", Key: "u"}, pod.SecretKeyRef{Name: "s", Key: "p"}))
	_, err = m.Objects()
	assert.ErrorContains(t, err, "nil")

	_, err = (&label.Config{}).XML()
	assert.ErrorContains(t, err, "tags: Required value")
	var b *label.Backend
	assert.Equal(t, "label.Backend(nil)", b.String())
	assert.Empty(t, b.Version(t.Context()))
}

// Label Studio takes everything after the host in LABEL_STUDIO_HOST as
// Django's FORCE_SCRIPT_NAME (core/settings/base.py), so a query or a
// fragment would end up in every link it builds.
func TestStudioHostRefusesQueryAndFragment(t *testing.T) {
	for _, h := range []string{"https://labels.example.com/ls?x=1", "https://labels.example.com/ls#top"} {
		_, err := label.Studio("labels").Admin(pod.SecretKeyRef{Name: "admin", Key: "email"}, pod.SecretKeyRef{Name: "admin", Key: "pw"}).Token(pod.SecretKeyRef{Name: "admin", Key: "token"}).Host(h).Objects()
		assert.ErrorContains(t, err, "host: Invalid value", h)
		assert.ErrorContains(t, err, "query or a fragment", h)
	}
}

// A webhook header value with a line break or a control character is
// refused before Label Studio stores a webhook whose every call fails.
func TestCreateWebhookRefusesControlCharactersInHeaders(t *testing.T) {
	c, srv := newClient(t)
	_, err := c.CreateWebhook(t.Context(), label.Webhook{Project: 1, URL: "http://hook/", SendForAllActions: true,
		Headers: map[string]string{"X-Token": "abc\r\nX-Evil: 1"}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "headers[X-Token]: Invalid value")
	assert.NotContains(t, err.Error(), "abc", "a header value is often a secret: it is not repeated")
	assert.Empty(t, srv.Requests())
}

// Storage classes are names the API server checks (DNS subdomains); a path
// that climbs out of the host's prefix is refused; a served model name
// BackendFromEnv would refuse in the pod is refused at build.
func TestWorkloadsRefuseWhatFailsLater(t *testing.T) {
	base := func() *label.StudioServer {
		return label.Studio("labels").Admin(pod.SecretKeyRef{Name: "admin", Key: "email"}, pod.SecretKeyRef{Name: "admin", Key: "pw"}).Token(pod.SecretKeyRef{Name: "admin", Key: "token"})
	}
	_, err := base().Storage("1Gi", "Bad_Class").Postgres(pod.SecretKeyRef{Name: "db", Key: "pw"}, "1Gi", "x y").Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `storage.storageClass: Invalid value: "Bad_Class"`)
	assert.Contains(t, err.Error(), `postgres.storageClass: Invalid value: "x y"`)

	_, err = base().Host("https://labels.example.com/a/../../x").Objects()
	assert.ErrorContains(t, err, `host: Invalid value: "https://labels.example.com/a/../../x": must not hold . or .. path segments`)

	for _, m := range []string{" ", " qwen", "qwen\n"} {
		_, err = label.MLBackend("b", "img").Model("http://m/v1", m).Objects()
		assert.ErrorContains(t, err, "model.servedModel", "%q", m)
	}
}

// Counts so large they overflow are reported as such, not as a negative
// number of ratings.
func TestFleissKappaSaysCountsOverflow(t *testing.T) {
	_, err := label.FleissKappa([][]int{{math.MaxInt, math.MaxInt}})
	assert.ErrorContains(t, err, "fleiss' kappa: item 0: the counts add up to more than")
}

// A Choice or Label without a value is refused by its path instead of
// being dropped from the options.
func TestParseConfigRefusesOptionsWithoutValue(t *testing.T) {
	_, err := label.ParseConfig(`<View><Text name="t" value="$t"/><Choices name="c" toName="t"><Choice value="a"/><Choice/></Choices></View>`)
	assert.ErrorContains(t, err, "View.children[1].children[1].value: Required value")
	_, err = label.ParseConfig(`<View><Text name="t" value="$t"/><Labels name="l" toName="t"><Label alias="x"/></Labels></View>`)
	assert.ErrorContains(t, err, "View.children[1].children[0].value: Required value")
}

// A task's data is stored in Label Studio and shown to every annotator: a
// URL in it that carries credentials is refused, and not repeated.
func TestImportTasksRefusesURLsWithCredentials(t *testing.T) {
	c, srv := newClient(t)
	_, err := c.ImportTasks(t.Context(), 1, []label.Task{
		{Data: map[string]any{"image": "s3://AKIA:s3cr3t@bucket/cat.png"}},
		{Data: map[string]any{"image": "s3://bucket/dog.png", "page": "https://user:s3cr3t@wiki/x"}},
		{Data: map[string]any{"text": "mail me at a@b.example: ok"}},
		{Data: map[string]any{"image": "s3://AKIA:s3cr3t@bucket:port/x.png"}}, // does not parse
	})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "tasks[0].data[image]: Invalid value")
	assert.Contains(t, err.Error(), "tasks[1].data[page]: Invalid value")
	assert.NotContains(t, err.Error(), "tasks[2]", "text that is not a URL is data")
	assert.Contains(t, err.Error(), "tasks[3].data[image]: Invalid value")
	assert.NotContains(t, err.Error(), "s3cr3t")
	assert.Empty(t, srv.Requests())
}
