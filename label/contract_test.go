package label_test

// Label Studio and label-studio-ml-backend cannot run here: these tests
// check what label renders and sends for them against contracts read from
// their source at the versions label pins (testdata/contracts), so that a
// misspelt variable, a tag attribute Label Studio does not read or an API
// field it does not take fails here rather than in a pod.

import (
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"maps"
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

	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/label"
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
