package label_test

// Label Studio cannot run here (a Python service no package here
// provides): these tests run the client against labeltest.Server, an
// httptest server that follows Label Studio 1.13.1's request and response
// shapes, and against handlers written inline in those shapes.

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
)

const token = "test-token"

func newClient(t *testing.T, opts ...label.ClientOption) (*label.Client, *labeltest.Server) {
	t.Helper()
	srv := labeltest.NewServer(token)
	t.Cleanup(srv.Close)
	c, err := label.NewClient(srv.URL, append([]label.ClientOption{label.Token(token), label.Retries(3, time.Millisecond)}, opts...)...)
	require.NoError(t, err)
	return c, srv
}

func TestClientProjectsLifecycle(t *testing.T) {
	c, _ := newClient(t, label.PageSize(2))
	ctx := t.Context()
	var ids []int
	for _, title := range []string{"a", "b", "c"} {
		p, err := c.CreateProject(ctx, title, "d", label.TextClassification("pos", "neg"))
		require.NoError(t, err)
		ids = append(ids, p.ID)
		assert.Contains(t, p.LabelConfig, `<Choice value="pos">`)
	}
	all, err := c.ListProjects(ctx)
	require.NoError(t, err)
	require.Len(t, all, 3, "three projects over two pages of two")
	assert.Equal(t, "c", all[2].Title)

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
	h, err := c.CreateWebhook(ctx, label.Webhook{Project: 1, URL: "http://hook:9090/webhook", SendPayload: true, IsActive: true, Actions: []string{"ANNOTATION_CREATED"}})
	require.NoError(t, err)
	list, err := c.ListWebhooks(ctx, 1)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, []string{"ANNOTATION_CREATED"}, list[0].Actions)
	require.NoError(t, c.DeleteWebhook(ctx, h.ID))
	assert.True(t, label.IsNotFound(c.DeleteWebhook(ctx, h.ID)))
	_, err = c.CreateWebhook(ctx, label.Webhook{URL: "ftp://x"})
	assert.ErrorContains(t, err, "url: Invalid value")

	require.NoError(t, c.ConnectBackend(ctx, 1, "qwen", "http://backend:9090", true))
	assert.Equal(t, "http://backend:9090", srv.Backends()[0]["url"])
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
	gc, err := label.NewClient(gw.URL, label.Token(token), label.Retries(3, time.Millisecond))
	require.NoError(t, err)
	_, err = gc.CreateProject(t.Context(), "x", "", label.TextClassification("a"))
	assert.EqualError(t, err, "label studio create project: POST /api/projects/: 502 Bad Gateway: <html>bad gateway</html>")
	assert.Equal(t, int32(1), calls.Load())
	_, err = gc.GetProject(t.Context(), 1)
	require.Error(t, err)
	assert.Equal(t, int32(5), calls.Load(), "a GET is retried three times")
}

func TestNewClientErrors(t *testing.T) {
	_, err := label.NewClient("", label.Retries(-1, -time.Second), label.PageSize(0), label.HTTPClient(nil))
	for _, want := range []string{"baseURL: Required value", "token: Required value", "retries: Invalid value: -1", "backoff: Invalid value", "pageSize: Invalid value: 0", "httpClient: Required value"} {
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
	assert.ErrorContains(t, err, `label studio connect s3 storage: POST /api/storages/s3: 400 Bad Request: Validation error; project: Invalid pk "99"`)
}
