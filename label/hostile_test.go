package label_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/pod"
)

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
