package label_test

// Label Studio cannot run here (a Python service no package here
// provides): these tests run the client against labeltest.Server, an
// httptest server that follows Label Studio 1.13.1's request and response
// shapes, and against handlers written inline in those shapes.

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/retry"
)

const token = "test-token"

func newClient(t *testing.T, opts ...label.ClientOption) (*label.Client, *labeltest.Server) {
	t.Helper()
	srv := labeltest.NewServer(token)
	t.Cleanup(srv.Close)
	c, err := label.NewClient(srv.URL, append([]label.ClientOption{label.Token(token), label.Retry(retry.Policy{Limit: 3, Backoff: time.Millisecond, Factor: 2})}, opts...)...)
	require.NoError(t, err)
	return c, srv
}

func TestClientProjectsLifecycle(t *testing.T) {
	c, srv := newClient(t, label.PageSize(2))
	ctx := t.Context()
	var ids []int
	for _, title := range []string{"alpha", "beta", "gamma"} {
		p, err := c.CreateProject(ctx, title, "d", label.TextClassification("pos", "neg"))
		require.NoError(t, err)
		ids = append(ids, p.ID)
		assert.Contains(t, p.LabelConfig, `<Choice value="pos">`)
	}
	all, err := c.ListProjects(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3, "three projects over two pages of two")
	assert.Equal(t, "gamma", all[2].Title)

	cfg, err := c.ProjectConfig(ctx, ids[0])
	require.NoError(t, err)
	ctl, ok := cfg.Control("label")
	require.True(t, ok)
	assert.Equal(t, []string{"pos", "neg"}, ctl.Options)

	up, err := c.UpdateProject(ctx, ids[0], "renamed", "", label.MultiLabel("x"))
	require.NoError(t, err)
	assert.Equal(t, "renamed", up.Title)
	assert.Equal(t, "d", up.Description)
	assert.Contains(t, up.LabelConfig, `choice="multiple"`)

	// Label Studio's title limits (3 to 50 characters) and the config
	// are checked before the call, together.
	before := len(srv.Requests())
	_, err = c.CreateProject(ctx, "ab", "", label.NewConfig())
	assert.ErrorContains(t, err, `label studio create project: [title: Invalid value: "ab": must be between 3 and 50 characters long, tags: Required value`)
	_, err = c.UpdateProject(ctx, ids[0], strings.Repeat("é", 51), "", nil)
	assert.ErrorContains(t, err, "title: Invalid value")
	assert.Len(t, srv.Requests(), before)

	require.NoError(t, c.DeleteProject(ctx, ids[1]))
	_, err = c.GetProject(ctx, ids[1])
	require.Error(t, err)
	assert.True(t, label.IsNotFound(err))
	assert.EqualError(t, err, "label studio get project: GET /api/projects/2/: 404 Not Found: No Project matches the given query.")
}

func TestClientTasksPredictionsAnnotationsExport(t *testing.T) {
	c, _ := newClient(t, label.PageSize(2))
	ctx := t.Context()
	p, err := c.CreateProject(ctx, "sentiment", "", label.TextClassification("pos", "neg"))
	require.NoError(t, err)
	res, err := c.ImportTasks(ctx, p.ID, []label.Task{
		{Data: map[string]any{"text": "great"}},
		{Data: map[string]any{"text": "awful"}},
		{Data: map[string]any{"text": "fine"}, Predictions: []label.Prediction{{Result: []label.Result{choice("pos")}, Score: 0.5, ModelVersion: "v0"}}},
	})
	require.NoError(t, err)
	assert.Equal(t, label.ImportResult{TaskCount: 3, PredictionCount: 1, Duration: 0.01}, res)

	tasks, err := c.ListTasks(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, tasks, 3, "two pages")
	assert.Equal(t, "fine", tasks[2].Text("text"))

	pred, err := c.CreatePrediction(ctx, label.Prediction{Task: tasks[0].ID, Result: []label.Result{choice("pos")}, Score: 0.9, ModelVersion: "qwen@1"})
	require.NoError(t, err)
	assert.NotZero(t, pred.ID)
	_, err = c.CreatePrediction(ctx, label.Prediction{Task: 999, Result: []label.Result{choice("pos")}})
	assert.EqualError(t, err, `label studio create prediction: POST /api/predictions/: 400 Bad Request: Validation error; task: Invalid pk "999" - object does not exist.`)
	_, err = c.CreatePrediction(ctx, label.Prediction{})
	assert.ErrorContains(t, err, "task: Required value")

	_, err = c.CreateAnnotation(ctx, tasks[0].ID, label.Annotation{Result: []label.Result{choice("pos")}, CompletedBy: 1})
	require.NoError(t, err)

	exported, err := c.Export(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, exported, 3)
	acc, ok := exported[0].Accepted()
	require.True(t, ok)
	assert.Equal(t, []string{"pos"}, acc.Result[0].Value.Choices)
	assert.Equal(t, "qwen@1", exported[0].Predictions[0].ModelVersion)
	assert.InDelta(t, 0.9, exported[0].Predictions[0].Score, 1e-9)

	_, err = c.ImportTasks(ctx, p.ID, nil)
	assert.ErrorContains(t, err, "tasks: Required value")
	_, err = c.ImportTasks(ctx, p.ID, []label.Task{{}})
	assert.ErrorContains(t, err, "tasks[0].data: Required value")
}

func TestClientWebhooksAndBackends(t *testing.T) {
	c, srv := newClient(t)
	ctx := t.Context()
	p, err := c.CreateProject(ctx, "hooks", "", label.TextClassification("a", "b"))
	require.NoError(t, err)
	h, err := c.CreateWebhook(ctx, label.Webhook{Project: p.ID, URL: "http://hook:9090/webhook", SendPayload: true, IsActive: true,
		Actions: []string{"ANNOTATION_CREATED", "ANNOTATIONS_DELETED"}, Headers: map[string]string{"X-Team": "nlp"}})
	require.NoError(t, err)
	list, err := c.ListWebhooks(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, []string{"ANNOTATION_CREATED", "ANNOTATIONS_DELETED"}, list[0].Actions)
	require.NoError(t, c.DeleteWebhook(ctx, h.ID))
	assert.True(t, label.IsNotFound(c.DeleteWebhook(ctx, h.ID)))
	_, err = c.CreateWebhook(ctx, label.Webhook{URL: "ftp://x", SendForAllActions: true})
	assert.ErrorContains(t, err, "url: Invalid value")

	// What Label Studio refuses (WebhookAction, validate_actions and
	// HEADERS_SCHEMA in label_studio/webhooks/models.py), or would never
	// send, is refused before the call, every problem at once.
	before := len(srv.Requests())
	_, err = c.CreateWebhook(ctx, label.Webhook{Project: p.ID, URL: "http://u:pw@hook/", Actions: []string{"ANNOTATION_DELETED", "PROJECT_CREATED"},
		Headers: map[string]string{"bad header": "x"}})
	for _, want := range []string{
		`url: Invalid value: "http://u:xxxxx@hook/": must not carry credentials`,
		`actions[0]: Unsupported value: "ANNOTATION_DELETED"`,
		`actions[1]: Forbidden: PROJECT_CREATED is an organization webhook's action`,
		`headers[bad header]: Invalid value: "bad header"`,
	} {
		assert.ErrorContains(t, err, want)
	}
	assert.NotContains(t, err.Error(), "pw@")
	_, err = c.CreateWebhook(ctx, label.Webhook{Project: p.ID, URL: "http://hook/"})
	assert.ErrorContains(t, err, "actions: Required value: a webhook with no actions and sendForAllActions false is never sent")
	_, err = c.CreateWebhook(ctx, label.Webhook{Project: p.ID, URL: "http://hook/", SendForAllActions: true, Actions: []string{"TASKS_CREATED"}})
	assert.ErrorContains(t, err, "actions: Forbidden: Label Studio ignores them")
	assert.Len(t, srv.Requests(), before, "refused before any call")

	require.NoError(t, c.ConnectBackend(ctx, p.ID, "qwen", "http://backend:9090", true))
	require.NoError(t, c.ConnectBackend(ctx, p.ID, "qwen-auth", "http://backend:9090", false, label.BackendBasicAuth("ls", "pw")))
	backends := srv.Backends()
	require.Len(t, backends, 2)
	assert.Equal(t, "http://backend:9090", backends[0]["url"])
	assert.Equal(t, "NONE", backends[0]["auth_method"])
	assert.Equal(t, "BASIC_AUTH", backends[1]["auth_method"])
	assert.Equal(t, "ls", backends[1]["basic_auth_user"])
	assert.Equal(t, true, backends[1]["basic_auth_pass_is_set"])
	err = c.ConnectBackend(ctx, 999, "x", "http://backend:9090", false)
	assert.ErrorContains(t, err, `label studio connect ml backend: POST /api/ml/: 400 Bad Request: Validation error; project: Invalid pk "999"`)
	err = c.ConnectBackend(ctx, 0, "x", "http://u:pw@backend:9090", false, label.BackendBasicAuth("ls", ""))
	for _, want := range []string{"project: Required value", "url: Invalid value", "use label.BackendBasicAuth", "basicAuth: Required value"} {
		assert.ErrorContains(t, err, want)
	}
	assert.NotContains(t, err.Error(), "pw@")
}

// The client spells every path as label_studio's urls.py files do; the
// stand-in answers 404 to any other spelling (Label Studio would append a
// missing slash itself, which is why a misspelling would go unnoticed
// there).
func TestClientPathsAsLabelStudioSpellsThem(t *testing.T) {
	c, srv := newClient(t)
	ctx := t.Context()
	p, err := c.CreateProject(ctx, "paths", "", label.TextClassification("a"))
	require.NoError(t, err)
	_, err = c.ImportTasks(ctx, p.ID, []label.Task{{Data: map[string]any{"text": "x"}}})
	require.NoError(t, err)
	tasks, err := c.ListTasks(ctx, p.ID)
	require.NoError(t, err)
	_, err = c.CreatePrediction(ctx, label.Prediction{Task: tasks[0].ID, Result: []label.Result{choice("a")}})
	require.NoError(t, err)
	_, err = c.CreateAnnotation(ctx, tasks[0].ID, label.Annotation{Result: []label.Result{choice("a")}})
	require.NoError(t, err)
	_, err = c.Export(ctx, p.ID)
	require.NoError(t, err)
	require.NoError(t, c.ConnectBackend(ctx, p.ID, "b", "http://b:9090", false))
	st, err := c.ConnectS3(ctx, label.S3Storage{Project: p.ID, Bucket: "b", RegexFilter: ".*"})
	require.NoError(t, err)
	require.NoError(t, c.SyncS3(ctx, st.ID))
	id := strconv.Itoa(p.ID)
	assert.Equal(t, []string{
		"POST /api/projects/", "POST /api/projects/" + id + "/import", "GET /api/tasks/", "POST /api/predictions/",
		"POST /api/tasks/" + strconv.Itoa(tasks[0].ID) + "/annotations/", "GET /api/projects/" + id + "/export",
		"POST /api/ml/", "POST /api/storages/s3/", "POST /api/storages/s3/" + strconv.Itoa(st.ID) + "/sync",
	}, srv.Requests())

	for _, path := range []string{"/api/tasks", "/api/ml", "/api/storages/s3", "/api/projects/" + id} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+path, nil)
		require.NoError(t, err)
		req.Header.Set("Authorization", "Token "+token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, path)
	}
}

func TestClientRetriesAndAuth(t *testing.T) {
	c, srv := newClient(t)
	srv.FailNext("/api/projects/", 2)
	_, err := c.ListProjects(t.Context())
	require.NoError(t, err, "two 503s are retried")

	srv.FailNext("/api/projects/", 5)
	_, err = c.ListProjects(t.Context())
	assert.EqualError(t, err, "label studio list projects: GET /api/projects/: 503 Service Unavailable: Service Unavailable")

	bad, err := label.NewClient(srv.URL, label.Token("wrong"))
	require.NoError(t, err)
	_, err = bad.ListProjects(t.Context())
	assert.ErrorContains(t, err, "401 Unauthorized: Authentication credentials were not provided.")
	assert.NotContains(t, err.Error(), "wrong", "the token is never in errors")
	assert.NotContains(t, bad.String(), "wrong")

	// A POST is not retried after a 502: the server may have acted.
	var calls atomic.Int32
	gw := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte("<html>bad gateway</html>"))
	}))
	t.Cleanup(gw.Close)
	gc, err := label.NewClient(gw.URL, label.Token(token), label.Retry(retry.Policy{Limit: 3, Backoff: time.Millisecond, Factor: 2}))
	require.NoError(t, err)
	_, err = gc.CreateProject(t.Context(), "xyz", "", label.TextClassification("a"))
	assert.EqualError(t, err, "label studio create project: POST /api/projects/: 502 Bad Gateway: <html>bad gateway</html>")
	assert.Equal(t, int32(1), calls.Load())
	_, err = gc.GetProject(t.Context(), 1)
	require.Error(t, err)
	assert.Equal(t, int32(5), calls.Load(), "a GET is retried three times")
}

func TestNewClientErrors(t *testing.T) {
	_, err := label.NewClient("", label.Retry(retry.Policy{Limit: -1, Backoff: -time.Second}), label.PageSize(0), label.HTTPClient(nil))
	for _, want := range []string{"baseURL: Required value", "token: Required value", "retry.limit: Invalid value: \"-1\"", "retry.backoff: Invalid value", "pageSize: Invalid value: 0", "httpClient: Required value"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = label.NewClient("http://u:secret@studio", label.TokenFromEnv("LABEL_TEST_UNSET_TOKEN"))
	assert.ErrorContains(t, err, "must not carry credentials")
	assert.NotContains(t, err.Error(), "secret")
	assert.ErrorContains(t, err, `tokenFromEnv: Invalid value: "LABEL_TEST_UNSET_TOKEN"`)

	var nilClient *label.Client
	_, err = nilClient.ListProjects(t.Context())
	assert.ErrorContains(t, err, "the *Client is nil")
}

func choice(v string) label.Result {
	return label.Result{FromName: "label", ToName: "text", Type: "choices", Value: label.Value{Choices: []string{v}}}
}

func TestClientS3Storage(t *testing.T) {
	c, srv := newClient(t)
	p, err := c.CreateProject(t.Context(), "images", "", label.ImageClassification("cat", "dog"))
	require.NoError(t, err)
	st, err := c.ConnectS3(t.Context(), label.S3Storage{Project: p.ID, Bucket: "pets", Prefix: "raw/", RegexFilter: `.*\.jpg`, UseBlobURLs: true, Presign: true})
	require.NoError(t, err)
	assert.NotZero(t, st.ID)
	require.NoError(t, c.SyncS3(t.Context(), st.ID))
	assert.Contains(t, srv.Requests(), "POST /api/storages/s3/"+strconv.Itoa(st.ID)+"/sync")
	_, err = c.ConnectS3(t.Context(), label.S3Storage{})
	for _, want := range []string{"project: Required value", "bucket: Required value", "regexFilter: Required value"} {
		assert.ErrorContains(t, err, want)
	}
	_, err = c.ConnectS3(t.Context(), label.S3Storage{Project: 99, Bucket: "b", RegexFilter: ".*"})
	assert.ErrorContains(t, err, `label studio connect s3 storage: POST /api/storages/s3/: 400 Bad Request: Validation error; project: Invalid pk "99"`)
}
