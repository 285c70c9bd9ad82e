package label

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
)

// maxRequest bounds a request body.
const maxRequest = 32 << 20

// trainEvents are the webhook actions label-studio-ml-backend handles
// (TRAIN_EVENTS in label_studio_ml/api.py).
var trainEvents = []string{"ANNOTATION_CREATED", "ANNOTATION_UPDATED", "ANNOTATION_DELETED", "START_TRAINING"}

// ServeHTTP answers Label Studio's calls.
func (b *Backend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !b.usable() {
		writeError(w, http.StatusInternalServerError, errNilBackend)
		return
	}
	// /health answers without basic auth, unlike label_studio_ml/api.py's
	// check_auth: the kubelet's probes of an MLBackend cannot carry the
	// password without writing it into the pod spec, and the answer tells
	// nothing but that the server is up. Label Studio sending the
	// credentials there too is still answered.
	health := (r.URL.Path == "/health" || r.URL.Path == "/") && r.Method == http.MethodGet
	if b.user != "" && !health {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(b.user)) != 1 || subtle.ConstantTimeCompare([]byte(p), []byte(b.pass)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="Login required"`)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxRequest)
	switch {
	case health:
		writeBody(w, http.StatusOK, map[string]string{"status": "UP", "model_class": "cube-label"})
	case r.URL.Path == "/setup" && r.Method == http.MethodPost:
		// {project: "<id>.<created timestamp>", schema, hostname,
		// access_token, model_version, extra_params} → {model_version}
		// (MLApi.setup in label_studio/ml/api_connector.py, _setup in
		// label_studio_ml/api.py); Label Studio records the version.
		var req struct {
			Schema string `json:"schema"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("setup: %w", err))
			return
		}
		writeBody(w, http.StatusOK, map[string]string{"model_version": b.Version(r.Context())})
	case r.URL.Path == "/predict" && r.Method == http.MethodPost:
		// {tasks, model_version, project, label_config, params: {login,
		// password, context}} → {results: [{result, score, model_version}]},
		// one per task in order (MLApi.make_predictions in
		// label_studio/ml/api_connector.py; _predict in
		// label_studio_ml/api.py). project is "<id>.<timestamp>" there and
		// a number in later releases: it is not read.
		var req struct {
			Tasks       []Task `json:"tasks"`
			LabelConfig string `json:"label_config"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("predict: %w", err))
			return
		}
		cfg, err := ParseConfig(req.LabelConfig)
		if err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("predict: %w", err))
			return
		}
		preds, err := b.Predict(r.Context(), cfg, req.Tasks)
		if err != nil {
			writeError(w, http.StatusInternalServerError, err)
			return
		}
		type wire struct {
			Result       []Result `json:"result"`
			Score        float64  `json:"score"`
			ModelVersion string   `json:"model_version"`
		}
		results := make([]wire, len(preds))
		for i, p := range preds {
			results[i] = wire{p.Result, p.Score, p.ModelVersion}
		}
		writeBody(w, http.StatusOK, map[string]any{"results": results})
	case r.URL.Path == "/webhook" && r.Method == http.MethodPost:
		// Label Studio posts its webhook payload, {action, project, ...};
		// an action outside TRAIN_EVENTS is answered 200 {"status":
		// "Unknown event"}, a handled one 201 {"result", "status": "ok"}
		// (label-studio-ml-backend d02cedf; bdfc42b answered 201 {}), and a
		// failing fit 500, as an exception out of webhook() is.
		var req map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("webhook: %w", err))
			return
		}
		var action string
		if err := json.Unmarshal(req["action"], &action); err != nil {
			writeError(w, http.StatusBadRequest, fmt.Errorf("webhook: action: %w", err))
			return
		}
		if !slices.Contains(trainEvents, action) {
			writeBody(w, http.StatusOK, map[string]string{"status": "Unknown event"})
			return
		}
		if b.onWebhook != nil {
			delete(req, "action")
			payload, err := json.Marshal(req)
			if err == nil {
				err = b.onWebhook(r.Context(), action, payload)
			}
			if err != nil {
				writeError(w, http.StatusInternalServerError, fmt.Errorf("webhook %s: %w", action, err))
				return
			}
		}
		writeBody(w, http.StatusCreated, map[string]any{"status": "ok", "result": nil})
	case r.URL.Path == "/metrics" && r.Method == http.MethodGet:
		writeBody(w, http.StatusOK, map[string]any{})
	default:
		http.NotFound(w, r)
	}
}

func writeBody(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeBody(w, status, map[string]string{"error": err.Error()})
}
