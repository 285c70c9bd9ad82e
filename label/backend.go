package label

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/inference"
)

// Backend is an ML backend for Label Studio: an http.Handler speaking the
// protocol of label-studio-ml-backend (label_studio_ml/api.py, read at
// commit bdfc42b of 2024-06-19, the last change before Label Studio
// 1.13.1, and at d02cedf of 2026-08-20): GET /health (and GET /), POST
// /setup, POST /predict, POST /webhook and GET /metrics, with optional HTTP
// basic auth (BASIC_AUTH_USER, BASIC_AUTH_PASS there), which Label Studio
// sends when the connection's auth method is BASIC_AUTH (BackendBasicAuth).
// It pre-annotates with a chat model behind inference.Client:
//
//   - Choices over a Text: the model picks among the options, or, with
//     Embeddings, the option nearest to the text by cosine similarity;
//   - Labels over a Text (entities, question-answering spans): the model
//     names spans, which are located in the text and given Label Studio's
//     offsets (UTF-16 code units, as the browser counts them);
//   - TextArea, Rating and Pairwise: the model writes, rates or chooses.
//
// Image controls get no result: a chat model does not see the image. The
// model version is recorded with every prediction. Mount it on any mux;
// MLBackend deploys a program that serves it.
type Backend struct {
	chat, embed *inference.Client
	version     string
	user, pass  string
	onWebhook   func(ctx context.Context, action string, payload json.RawMessage) error
}

// String describes the backend without its basic-auth password.
func (b *Backend) String() string {
	if b == nil {
		return "label.Backend(nil)"
	}
	out := fmt.Sprintf("label.Backend(chat %v", b.chat)
	if b.embed != nil {
		out += fmt.Sprintf(", embeddings %v", b.embed)
	}
	if b.user != "" {
		out += ", basic auth as " + b.user
	}
	return out + ")"
}

// GoString is String, so that %#v does not print the password either.
func (b *Backend) GoString() string { return b.String() }

// BackendOption configures NewBackend.
type BackendOption func(*Backend)

// ModelVersion sets the model version recorded with predictions (default
// the served model's name).
func ModelVersion(v string) BackendOption { return func(b *Backend) { b.version = v } }

// Embeddings suggests Choices by nearest label with an embedding model
// instead of asking the chat model.
func Embeddings(c *inference.Client) BackendOption { return func(b *Backend) { b.embed = c } }

// BasicAuth requires HTTP basic auth on every request, as Label Studio
// sends it when the backend's URL carries a user and password.
func BasicAuth(user, password string) BackendOption {
	return func(b *Backend) { b.user, b.pass = user, password }
}

// OnWebhook is called with each training event Label Studio posts to
// /webhook (ANNOTATION_CREATED, ANNOTATION_UPDATED, ANNOTATION_DELETED,
// START_TRAINING), for a caller that collects annotations to fine-tune on.
func OnWebhook(fn func(ctx context.Context, action string, payload json.RawMessage) error) BackendOption {
	return func(b *Backend) { b.onWebhook = fn }
}

// NewBackend returns an ML backend that asks chat.
func NewBackend(chat *inference.Client, opts ...BackendOption) (*Backend, error) {
	b := &Backend{chat: chat}
	for _, o := range opts {
		if o != nil {
			o(b)
		}
	}
	var errs field.ErrorList
	if chat == nil {
		errs = append(errs, field.Required(field.NewPath("chat"), "a inference.Client of a chat model"))
	}
	if (b.user == "") != (b.pass == "") {
		errs = append(errs, field.Required(field.NewPath("basicAuth"), "both a user and a password, or neither"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new ml backend: %w", errs.ToAggregate())
	}
	return b, nil
}

// The environment of an MLBackend's container, which BackendFromEnv reads.
const (
	EnvModelURL     = "OPENAI_BASE_URL"
	EnvModelAPIKey  = "OPENAI_API_KEY"
	EnvModel        = "OPENAI_MODEL"
	EnvEmbedURL     = "EMBEDDINGS_BASE_URL"
	EnvEmbedModel   = "EMBEDDINGS_MODEL"
	EnvModelVersion = "MODEL_VERSION"
	EnvBasicUser    = "BASIC_AUTH_USER"
	EnvBasicPass    = "BASIC_AUTH_PASS"
)

// BackendFromEnv builds the Backend an MLBackend's container serves, from
// the variables MLBackend sets.
func BackendFromEnv() (*Backend, error) {
	var opts []inference.ClientOption
	if m := os.Getenv(EnvModel); m != "" {
		opts = append(opts, inference.ServedModel(m))
	}
	if os.Getenv(EnvModelAPIKey) != "" {
		opts = append(opts, inference.APIKeyFromEnv(EnvModelAPIKey))
	}
	chat, err := inference.NewClient(os.Getenv(EnvModelURL), opts...)
	if err != nil {
		return nil, fmt.Errorf("ml backend from env %s: %w", EnvModelURL, err)
	}
	bopts := []BackendOption{ModelVersion(os.Getenv(EnvModelVersion)), BasicAuth(os.Getenv(EnvBasicUser), os.Getenv(EnvBasicPass))}
	if u := os.Getenv(EnvEmbedURL); u != "" {
		eopts := []inference.ClientOption{}
		if m := os.Getenv(EnvEmbedModel); m != "" {
			eopts = append(eopts, inference.ServedModel(m))
		}
		ec, err := inference.NewClient(u, eopts...)
		if err != nil {
			return nil, fmt.Errorf("ml backend from env %s: %w", EnvEmbedURL, err)
		}
		bopts = append(bopts, Embeddings(ec))
	}
	return NewBackend(chat, bopts...)
}

var errNilBackend = errors.New("label: the *Backend is nil or has no chat model: make one with NewBackend")

func (b *Backend) usable() bool { return b != nil && b.chat != nil }

// Version returns the model version recorded with predictions.
func (b *Backend) Version(ctx context.Context) string {
	if !b.usable() {
		return ""
	}
	if b.version != "" {
		return b.version
	}
	if m := b.chat.Model(); m != "" {
		return m
	}
	return "cube-label"
}

// undecided is the score of a result whose model gave no confidence.
const undecided = 0.5

// Predict pre-annotates tasks for cfg: one prediction per task, in order,
// with a result per control the model could answer.
func (b *Backend) Predict(ctx context.Context, cfg *Config, tasks []Task) ([]Prediction, error) {
	if !b.usable() {
		return nil, errNilBackend
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	out := make([]Prediction, len(tasks))
	var errs []error
	for i, t := range tasks {
		p, err := b.predictTask(ctx, cfg, t)
		if err != nil {
			errs = append(errs, fmt.Errorf("predict task %d: %w", t.ID, err))
			if ctx.Err() != nil {
				break
			}
		}
		p.Task = t.ID
		out[i] = p
	}
	return out, errors.Join(errs...)
}

func (b *Backend) predictTask(ctx context.Context, cfg *Config, t Task) (p Prediction, err error) {
	p = Prediction{Result: []Result{}}
	// After the calls: the served model is known once the first is made.
	defer func() { p.ModelVersion = b.Version(ctx) }()
	var data strings.Builder
	for _, tag := range cfg.Tags() {
		if tag.Kind == TagText {
			fmt.Fprintf(&data, "%s: %s\n", tag.Name, t.Text(tag.DataKey()))
		}
	}
	var scores []float64
	for _, ctl := range cfg.Tags() {
		if !ctl.IsControl() {
			continue
		}
		obj, _ := cfg.Object(ctl.ToName[0])
		if obj.Kind != TagText {
			continue // image controls: a chat model does not see the image
		}
		text := t.Text(obj.DataKey())
		var rs []Result
		switch ctl.Kind {
		case TagChoices:
			rs, err = b.choices(ctx, ctl, text, data.String())
		case TagLabels:
			rs, err = b.spans(ctx, ctl, text, data.String())
		case TagTextArea, TagRating, TagPairwise:
			rs, err = b.free(ctx, ctl, data.String())
		}
		if err != nil {
			return p, fmt.Errorf("%s %q: %w", ctl.Kind, ctl.Name, err)
		}
		for _, r := range rs {
			if r.Score != nil {
				scores = append(scores, *r.Score)
			}
		}
		p.Result = append(p.Result, rs...)
	}
	if len(scores) > 0 {
		for _, s := range scores {
			p.Score += s
		}
		p.Score /= float64(len(scores))
	}
	return p, nil
}

func result(ctl Tag, v Value, score float64) Result {
	s := math.Max(0, math.Min(1, score))
	return Result{FromName: ctl.Name, ToName: ctl.ToName[0], Type: ctl.ResultType(), Value: v, Score: &s}
}

// ask sends the prompt and decodes the first JSON object of the answer
// into out.
func (b *Backend) ask(ctx context.Context, prompt string, out any) error {
	resp, err := b.chat.Chat(ctx,
		inference.SystemMessage("You pre-annotate data for human reviewers. Answer with one JSON object and nothing else."),
		inference.UserMessage(prompt))
	if err != nil {
		return err
	}
	if len(resp.Choices) == 0 {
		return errors.New("the model sent no choices")
	}
	content := resp.Choices[0].Message.Content
	start, end := strings.Index(content, "{"), strings.LastIndex(content, "}")
	if start < 0 || end < start {
		return fmt.Errorf("the model's answer holds no JSON object: %q", truncate(content))
	}
	if err := json.Unmarshal([]byte(content[start:end+1]), out); err != nil {
		return fmt.Errorf("the model's answer is not the JSON asked for: %w: %q", err, truncate(content))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func canonical(options []string, v string) (string, bool) {
	for _, o := range options {
		if strings.EqualFold(strings.TrimSpace(v), o) {
			return o, true
		}
	}
	return "", false
}

func (b *Backend) choices(ctx context.Context, ctl Tag, text, data string) ([]Result, error) {
	if b.embed != nil {
		return b.nearest(ctx, ctl, text)
	}
	var ans struct {
		Choices []string `json:"choices"`
		Score   *float64 `json:"score"`
	}
	how := "exactly one"
	if ctl.Choice == Multiple {
		how = "every one that applies"
	}
	prompt := fmt.Sprintf("Choose %s of these labels for %q: %s.\n%s\nAnswer as {\"choices\": [...], \"score\": <confidence 0..1>}.",
		how, ctl.ToName[0], strings.Join(quoteAll(ctl.Options), ", "), data)
	if err := b.ask(ctx, prompt, &ans); err != nil {
		return nil, err
	}
	var picked []string
	for _, c := range ans.Choices {
		if o, ok := canonical(ctl.Options, c); ok && !slices.Contains(picked, o) {
			picked = append(picked, o)
		}
	}
	if len(picked) == 0 || (ctl.Choice != Multiple && len(picked) > 1) {
		return nil, nil // nothing usable: leave it to the annotator
	}
	return []Result{result(ctl, Value{Choices: picked}, scoreOr(ans.Score))}, nil
}

func scoreOr(s *float64) float64 {
	if s == nil || math.IsNaN(*s) {
		return undecided
	}
	return *s
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// nearest picks the option whose embedding is nearest the text's.
func (b *Backend) nearest(ctx context.Context, ctl Tag, text string) ([]Result, error) {
	vecs, err := b.embed.Embed(ctx, append([]string{text}, ctl.Options...)...)
	if err != nil {
		return nil, err
	}
	best, bestSim := -1, -2.0
	for i, v := range vecs[1:] {
		if s := cosine(vecs[0], v); s > bestSim {
			best, bestSim = i, s
		}
	}
	if best < 0 {
		return nil, nil
	}
	return []Result{result(ctl, Value{Choices: []string{ctl.Options[best]}}, bestSim)}, nil
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return -1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return -1
	}
	return dot / math.Sqrt(na*nb)
}

func (b *Backend) spans(ctx context.Context, ctl Tag, text, data string) ([]Result, error) {
	var ans struct {
		Spans []struct {
			Text  string   `json:"text"`
			Label string   `json:"label"`
			Score *float64 `json:"score"`
		} `json:"spans"`
	}
	prompt := fmt.Sprintf("Mark the spans of %q to label with one of %s, quoting each span exactly as it appears.\n%s\nAnswer as {\"spans\": [{\"text\": ..., \"label\": ..., \"score\": <confidence 0..1>}]}.",
		ctl.ToName[0], strings.Join(quoteAll(ctl.Options), ", "), data)
	if err := b.ask(ctx, prompt, &ans); err != nil {
		return nil, err
	}
	var out []Result
	from := 0
	for _, s := range ans.Spans {
		lbl, ok := canonical(ctl.Options, s.Label)
		if !ok || s.Text == "" {
			continue
		}
		at := strings.Index(text[from:], s.Text)
		if at < 0 {
			if at = strings.Index(text, s.Text); at < 0 {
				continue // not in the text: the model made it up
			}
		} else {
			at += from
		}
		from = at + len(s.Text)
		start, end := utf16Len(text[:at]), utf16Len(text[:at+len(s.Text)])
		out = append(out, result(ctl, Value{Start: &start, End: &end, Span: s.Text, Labels: []string{lbl}}, scoreOr(s.Score)))
	}
	return out, nil
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func (b *Backend) free(ctx context.Context, ctl Tag, data string) ([]Result, error) {
	switch ctl.Kind {
	case TagTextArea:
		var ans struct {
			Text  string   `json:"text"`
			Score *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Write the best %s for %q.\n%s\nAnswer as {\"text\": ..., \"score\": <confidence 0..1>}.", ctl.Name, ctl.ToName[0], data), &ans); err != nil {
			return nil, err
		}
		if strings.TrimSpace(ans.Text) == "" {
			return nil, nil
		}
		return []Result{result(ctl, Value{Lines: []string{ans.Text}}, scoreOr(ans.Score))}, nil
	case TagRating:
		var ans struct {
			Rating int      `json:"rating"`
			Score  *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Rate %q from 1 to %d.\n%s\nAnswer as {\"rating\": <1..%d>, \"score\": <confidence 0..1>}.", ctl.ToName[0], ctl.MaxRating, data, ctl.MaxRating), &ans); err != nil {
			return nil, err
		}
		if ans.Rating < 1 || ans.Rating > ctl.MaxRating {
			return nil, nil
		}
		return []Result{result(ctl, Value{Rating: ans.Rating}, scoreOr(ans.Score))}, nil
	default: // TagPairwise
		var ans struct {
			Selected string   `json:"selected"`
			Score    *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Which is better, %q (left) or %q (right)?\n%s\nAnswer as {\"selected\": \"left\" or \"right\", \"score\": <confidence 0..1>}.", ctl.ToName[0], ctl.ToName[1], data), &ans); err != nil {
			return nil, err
		}
		if ans.Selected != "left" && ans.Selected != "right" {
			return nil, nil
		}
		return []Result{result(ctl, Value{Selected: ans.Selected}, scoreOr(ans.Score))}, nil
	}
}

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

// PreannotateResult counts what Preannotate did.
type PreannotateResult struct {
	// Predicted tasks got a new prediction; Skipped already had one of
	// the backend's model version.
	Predicted, Skipped int
}

// Preannotate pre-annotates a whole project from the client side: every
// task without a prediction of the backend's model version gets one,
// posted with CreatePrediction. Failures are collected per task and
// returned together; the tasks that succeeded stay predicted.
func Preannotate(ctx context.Context, c *Client, project int, b *Backend) (PreannotateResult, error) {
	var res PreannotateResult
	if !b.usable() {
		return res, errNilBackend
	}
	cfg, err := c.ProjectConfig(ctx, project)
	if err != nil {
		return res, fmt.Errorf("preannotate project %d: %w", project, err)
	}
	tasks, err := c.ListTasks(ctx, project)
	if err != nil {
		return res, fmt.Errorf("preannotate project %d: %w", project, err)
	}
	version := b.Version(ctx)
	var errs []error
	for _, t := range tasks {
		if slices.ContainsFunc(t.Predictions, func(p Prediction) bool { return p.ModelVersion == version }) {
			res.Skipped++
			continue
		}
		preds, err := b.Predict(ctx, cfg, []Task{t})
		if err == nil {
			_, err = c.CreatePrediction(ctx, preds[0])
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("preannotate task %d: %w", t.ID, err))
			if ctx.Err() != nil {
				break
			}
			continue
		}
		res.Predicted++
	}
	return res, errors.Join(errs...)
}
