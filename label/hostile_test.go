package label_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/cubestudio/cube/label"
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
