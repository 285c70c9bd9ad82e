package label

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/urlcheck"
	"github.com/cubestudio/cube/retry"
)

// Client calls Label Studio's REST API (1.13.1). It authenticates with a
// user's access token in "Authorization: Token <token>", the scheme of
// Django REST framework's TokenAuthentication, which every curl example of
// the API reference of that time sends (label-studio-sdk 1.0.5's
// .mock/definition/projects.yml) and which later releases keep
// (REST_FRAMEWORK DEFAULT_AUTHENTICATION_CLASSES in
// label_studio/core/settings/base.py: jwt_auth.auth.TokenAuthenticationPhaseout).
// Paths are spelled as label_studio's urls.py files write them, trailing
// slash included.
// Calls that fail transiently (429, 502, 503, 504, or a broken connection
// on an idempotent call) are retried by the client's retry.Policy (Retry).
// A Client is safe for concurrent use.
type Client struct {
	base     *url.URL
	token    string
	http     *http.Client
	retry    retry.Policy
	pageSize int
}

// ClientOption configures NewClient.
type ClientOption interface{ applyClient(*clientOptions) }

type clientOptions struct {
	token, tokenEnv string
	tokenSet        bool
	http            *http.Client
	httpSet         bool
	retry           retry.Policy
	pageSize        int
}

type clientOptionFunc func(*clientOptions)

func (f clientOptionFunc) applyClient(o *clientOptions) { f(o) }

// Token authenticates with a Label Studio access token (Account & Settings,
// or LABEL_STUDIO_USER_TOKEN of the Studio workload). It is never printed.
func Token(token string) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.token, o.tokenEnv, o.tokenSet = token, "", true })
}

// TokenFromEnv reads the access token from environment variable name.
func TokenFromEnv(name string) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.token, o.tokenEnv, o.tokenSet = "", name, true })
}

// HTTPClient sends requests with c.
func HTTPClient(c *http.Client) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.http, o.httpSet = c, true })
}

// DefaultRetry is how a client retries a transient failure unless Retry
// says otherwise: 3 more attempts, 200ms before the first, the wait
// doubled each time up to a minute.
func DefaultRetry() retry.Policy {
	return retry.Policy{Limit: 3, Backoff: 200 * time.Millisecond, Factor: 2, MaxBackoff: time.Minute}
}

// Retry replaces how a transient failure is retried (DefaultRetry).
func Retry(p retry.Policy) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.retry = p })
}

// PageSize sets how many items each page of a list call asks for
// (default 100, REST_FRAMEWORK PAGE_SIZE).
func PageSize(n int) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.pageSize = n })
}

// NewClient returns a client of the Label Studio at baseURL
// ("http://studio:8080"). A token is required.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	o := clientOptions{retry: DefaultRetry(), pageSize: 100}
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	var errs field.ErrorList
	u, _ := url.Parse(baseURL)
	if err := checkHTTPURL(field.NewPath("baseURL"), baseURL, "the URL of Label Studio, such as http://studio:8080"); err != nil {
		errs = append(errs, err)
	} else if u.RawQuery != "" || u.Fragment != "" {
		errs = append(errs, field.Invalid(field.NewPath("baseURL"), u.Redacted(), "must not carry a query or a fragment"))
	}
	token := o.token
	if o.tokenEnv != "" {
		token = os.Getenv(o.tokenEnv)
		if token == "" {
			errs = append(errs, field.Invalid(field.NewPath("tokenFromEnv"), o.tokenEnv, "environment variable is unset or empty"))
		}
	} else if strings.TrimSpace(token) == "" {
		errs = append(errs, field.Required(field.NewPath("token"), "Label Studio's API needs an access token: use label.Token or label.TokenFromEnv"))
	}
	if o.httpSet && o.http == nil {
		errs = append(errs, field.Required(field.NewPath("httpClient"), ""))
	}
	for _, pr := range o.retry.Problems() {
		errs = append(errs, field.Invalid(field.NewPath("retry", pr.Field), pr.Value, pr.Detail))
	}
	if o.pageSize < 1 {
		errs = append(errs, field.Invalid(field.NewPath("pageSize"), o.pageSize, "must be positive"))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("new label studio client: %w", errs.ToAggregate())
	}
	hc := &http.Client{Timeout: time.Minute}
	if o.http != nil {
		hc = o.http
	}
	u.Path = strings.TrimRight(u.Path, "/")
	return &Client{base: u, token: token, http: hc, retry: o.retry, pageSize: o.pageSize}, nil
}

// String describes the client without its token.
func (c *Client) String() string {
	if c == nil || c.base == nil {
		return "label.Client(nil)"
	}
	return "label.Client(" + c.base.String() + ")"
}

// GoString is String, so that %#v does not print the token either.
func (c *Client) GoString() string { return c.String() }

// APIError is a call Label Studio answered with an error status. Its
// message names the call and says what the server said: the "detail" and
// "validation_errors" of Label Studio's error body
// (label_studio/core/utils/common.py custom_exception_handler).
type APIError struct {
	Call       string
	Method     string
	Path       string
	StatusCode int
	Detail     string
	// Validation holds field errors, field → messages.
	Validation map[string][]string
}

func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "label studio %s: %s %s: %d %s", e.Call, e.Method, e.Path, e.StatusCode, http.StatusText(e.StatusCode))
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	for _, k := range sortedKeys(e.Validation) {
		fmt.Fprintf(&b, "; %s: %s", k, strings.Join(e.Validation[k], " "))
	}
	return b.String()
}

// IsNotFound reports whether err is a 404 from Label Studio.
func IsNotFound(err error) bool {
	var e *APIError
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

var errNilClient = errors.New("label: the *Client is nil or zero: make one with NewClient")

// maxBody bounds how much of a response is read.
const maxBody = 256 << 20

// do sends one call, retrying transient failures, and decodes the answer
// into out (when not nil).
func (c *Client) do(ctx context.Context, call, method, path string, query url.Values, in, out any) error {
	if c == nil || c.base == nil || c.http == nil {
		return errNilClient
	}
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return fmt.Errorf("label studio %s: encode request: %w", call, err)
		}
	}
	u := *c.base
	u.Path += path
	u.RawQuery = query.Encode()
	idempotent := method != http.MethodPost
	err := retry.Do(ctx, c.retry, isTransient, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(body))
		if err != nil {
			return fmt.Errorf("label studio %s: %w", call, err)
		}
		req.Header.Set("Authorization", "Token "+c.token)
		req.Header.Set("Accept", "application/json")
		if in != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.http.Do(req)
		if err != nil {
			err = fmt.Errorf("label studio %s: %s %s: %w", call, method, path, err)
			if idempotent && ctx.Err() == nil {
				return transient{err}
			}
			return err
		}
		data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
		resp.Body.Close()
		switch {
		case readErr != nil:
			err := fmt.Errorf("label studio %s: %s %s: %w", call, method, path, readErr)
			if idempotent {
				return transient{err}
			}
			return err
		case resp.StatusCode >= 300:
			apiErr := newAPIError(call, method, path, resp.StatusCode, data)
			switch resp.StatusCode {
			case http.StatusTooManyRequests, http.StatusServiceUnavailable:
				return transient{apiErr}
			case http.StatusBadGateway, http.StatusGatewayTimeout:
				if idempotent {
					return transient{apiErr}
				}
			}
			return apiErr
		case out != nil && len(data) > 0:
			if err := json.Unmarshal(data, out); err != nil {
				return fmt.Errorf("label studio %s: %s %s: decode answer: %w", call, method, path, err)
			}
		}
		return nil
	})
	if t, ok := err.(transient); ok {
		// Retries ran out: the caller sees the last failure itself.
		return t.err
	}
	return err
}

// transient marks a failure worth another attempt: 429 and 503 always,
// 502, 504, a broken connection or a cut answer only for a call that may
// run twice (every method but POST).
type transient struct{ err error }

func (t transient) Error() string { return t.err.Error() }
func (t transient) Unwrap() error { return t.err }

func isTransient(err error) bool {
	_, ok := err.(transient)
	return ok
}

func newAPIError(call, method, path string, status int, data []byte) *APIError {
	e := &APIError{Call: call, Method: method, Path: path, StatusCode: status}
	var body struct {
		Detail           any            `json:"detail"`
		ValidationErrors map[string]any `json:"validation_errors"`
	}
	if json.Unmarshal(data, &body) == nil {
		if s, ok := body.Detail.(string); ok {
			e.Detail = s
		}
		for k, v := range body.ValidationErrors {
			if e.Validation == nil {
				e.Validation = map[string][]string{}
			}
			switch msgs := v.(type) {
			case []any:
				for _, m := range msgs {
					e.Validation[k] = append(e.Validation[k], fmt.Sprint(m))
				}
			default:
				e.Validation[k] = []string{fmt.Sprint(msgs)}
			}
		}
	}
	if e.Detail == "" && e.Validation == nil {
		text := strings.TrimSpace(string(data))
		if len(text) > 300 {
			text = text[:300] + "…"
		}
		e.Detail = text
	}
	return e
}

// The length a project's title may have (PROJECT_TITLE_MIN_LEN and
// PROJECT_TITLE_MAX_LEN of label_studio/core/settings/base.py, the
// validators of Project.title in label_studio/projects/models.py; "Must be
// between 3 and 50 characters long" in label-studio-sdk 1.0.5's Project).
// An empty title is allowed: Label Studio does not check a blank one.
const (
	minProjectTitle = 3
	maxProjectTitle = 50
)

func validateTitle(title string) field.ErrorList {
	if n := utf8.RuneCountInString(title); title != "" && (n < minProjectTitle || n > maxProjectTitle) {
		return field.ErrorList{field.Invalid(field.NewPath("title"), title,
			fmt.Sprintf("must be between %d and %d characters long", minProjectTitle, maxProjectTitle))}
	}
	return nil
}

// CreateProject creates a project with the rendered labeling config.
func (c *Client) CreateProject(ctx context.Context, title, description string, config *Config) (Project, error) {
	errs := validateTitle(title)
	if config != nil {
		errs = append(errs, config.validate()...)
	}
	if len(errs) > 0 {
		return Project{}, fmt.Errorf("label studio create project: %w", errs.ToAggregate())
	}
	xmlConfig, err := config.XML()
	if err != nil {
		return Project{}, fmt.Errorf("label studio create project: %w", err)
	}
	var p Project
	err = c.do(ctx, "create project", http.MethodPost, "/api/projects/", nil,
		Project{Title: title, Description: description, LabelConfig: xmlConfig}, &p)
	return p, err
}

// GetProject returns the project with id.
func (c *Client) GetProject(ctx context.Context, id int) (Project, error) {
	var p Project
	err := c.do(ctx, "get project", http.MethodGet, "/api/projects/"+strconv.Itoa(id)+"/", nil, nil, &p)
	return p, err
}

// ProjectConfig returns the project's labeling config, parsed.
func (c *Client) ProjectConfig(ctx context.Context, id int) (*Config, error) {
	p, err := c.GetProject(ctx, id)
	if err != nil {
		return nil, err
	}
	return ParseConfig(p.LabelConfig)
}

// ListProjects returns every project, following the pages of
// GET /api/projects/ ({count, next, previous, results}).
func (c *Client) ListProjects(ctx context.Context) ([]Project, error) {
	var all []Project
	for page := 1; ; page++ {
		var resp struct {
			Count   int       `json:"count"`
			Next    *string   `json:"next"`
			Results []Project `json:"results"`
		}
		q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(c.pageSizeOr())}}
		if err := c.do(ctx, "list projects", http.MethodGet, "/api/projects/", q, nil, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Results...)
		if resp.Next == nil || len(resp.Results) == 0 {
			return all, nil
		}
	}
}

func (c *Client) pageSizeOr() int {
	if c == nil || c.pageSize < 1 {
		return 100
	}
	return c.pageSize
}

// UpdateProject changes the title, description and (when config is not
// nil) the labeling config of a project; empty strings are left unchanged.
func (c *Client) UpdateProject(ctx context.Context, id int, title, description string, config *Config) (Project, error) {
	patch := Project{Title: title, Description: description}
	errs := validateTitle(title)
	if config != nil {
		errs = append(errs, config.validate()...)
	}
	if len(errs) > 0 {
		return Project{}, fmt.Errorf("label studio update project: %w", errs.ToAggregate())
	}
	if config != nil {
		x, err := config.XML()
		if err != nil {
			return Project{}, fmt.Errorf("label studio update project: %w", err)
		}
		patch.LabelConfig = x
	}
	var p Project
	err := c.do(ctx, "update project", http.MethodPatch, "/api/projects/"+strconv.Itoa(id)+"/", nil, patch, &p)
	return p, err
}

// DeleteProject deletes a project and its tasks.
func (c *Client) DeleteProject(ctx context.Context, id int) error {
	return c.do(ctx, "delete project", http.MethodDelete, "/api/projects/"+strconv.Itoa(id)+"/", nil, nil, nil)
}

// ImportTasks imports tasks as JSON (POST /api/projects/{id}/import with a
// list of {data, predictions, annotations}). Data values may be URLs
// (http, s3://, gs://) for Label Studio to resolve through its storages;
// a URL with a password in it is refused (it would be stored and shown to
// every annotator), without repeating the password.
func (c *Client) ImportTasks(ctx context.Context, project int, tasks []Task) (ImportResult, error) {
	if len(tasks) == 0 {
		return ImportResult{}, fmt.Errorf("label studio import tasks: %w", field.Required(field.NewPath("tasks"), "nothing to import"))
	}
	var errs field.ErrorList
	for i, t := range tasks {
		p := field.NewPath("tasks").Index(i).Child("data")
		if len(t.Data) == 0 {
			errs = append(errs, field.Required(p, ""))
		}
		for _, k := range sortedKeys(t.Data) {
			// Label Studio stores the data and shows it to every
			// annotator: a password in a URL there (s3://key:secret@…)
			// would be readable by all of them. Storages hold credentials.
			s, _ := t.Data[k].(string)
			hasPassword := urlcheck.HasUserinfo(s) // parsed or not
			if u, err := url.Parse(s); err == nil {
				_, hasPassword = u.User.Password()
			}
			if hasPassword {
				errs = append(errs, field.Invalid(p.Key(k), urlcheck.Redact(s), "must not carry credentials: connect a storage (ConnectS3) instead"))
			}
		}
	}
	if len(errs) > 0 {
		return ImportResult{}, fmt.Errorf("label studio import tasks: %w", errs.ToAggregate())
	}
	var r ImportResult
	err := c.do(ctx, "import tasks", http.MethodPost, "/api/projects/"+strconv.Itoa(project)+"/import", nil, tasks, &r)
	return r, err
}

// ListTasks returns every task of a project with its annotations and
// predictions (fields=all), following the pages of GET /api/tasks/?project=
// ({tasks, total, total_annotations, total_predictions}: TasksListResponse
// of label-studio-sdk 1.0.5's .mock/definition/tasks.yml; the path is
// api/tasks/ in label_studio/tasks/urls.py).
func (c *Client) ListTasks(ctx context.Context, project int) ([]Task, error) {
	var all []Task
	for page := 1; ; page++ {
		var resp struct {
			Tasks []Task `json:"tasks"`
			Total int    `json:"total"`
		}
		q := url.Values{"project": {strconv.Itoa(project)}, "fields": {"all"}, "page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(c.pageSizeOr())}}
		if err := c.do(ctx, "list tasks", http.MethodGet, "/api/tasks/", q, nil, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Tasks...)
		if len(resp.Tasks) == 0 || len(all) >= resp.Total {
			return all, nil
		}
	}
}

// CreatePrediction adds a pre-annotation to a task, with the model version
// and score Label Studio shows and filters by.
func (c *Client) CreatePrediction(ctx context.Context, p Prediction) (Prediction, error) {
	var errs field.ErrorList
	if p.Task == 0 {
		errs = append(errs, field.Required(field.NewPath("task"), ""))
	}
	if !finite(p.Score) {
		// Label Studio orders tasks by it; JSON cannot carry it.
		errs = append(errs, field.Invalid(field.NewPath("score"), p.Score, "must be a finite number"))
	}
	errs = append(errs, validateResults(field.NewPath("result"), p.Result)...)
	if len(errs) > 0 {
		return Prediction{}, fmt.Errorf("label studio create prediction: %w", errs.ToAggregate())
	}
	var out Prediction
	err := c.do(ctx, "create prediction", http.MethodPost, "/api/predictions/", nil, p, &out)
	return out, err
}

// CreateAnnotation adds an annotation to a task.
func (c *Client) CreateAnnotation(ctx context.Context, task int, a Annotation) (Annotation, error) {
	if errs := validateResults(field.NewPath("result"), a.Result); len(errs) > 0 {
		return Annotation{}, fmt.Errorf("label studio create annotation: %w", errs.ToAggregate())
	}
	var out Annotation
	err := c.do(ctx, "create annotation", http.MethodPost, "/api/tasks/"+strconv.Itoa(task)+"/annotations/", nil, a, &out)
	return out, err
}

// Export returns every task of a project with its annotations and
// predictions in Label Studio's JSON export (GET
// /api/projects/{id}/export?exportType=JSON&download_all_tasks=true:
// label_studio/data_export/api.py ExportAPI reads exportType, or
// export_type, and download_all_tasks through ExportParamSerializer, and
// answers a file holding the JSON list of tasks). Convert it with SFT,
// PreferencePairs and KTO.
func (c *Client) Export(ctx context.Context, project int) ([]Task, error) {
	var tasks []Task
	q := url.Values{"exportType": {"JSON"}, "download_all_tasks": {"true"}}
	err := c.do(ctx, "export", http.MethodGet, "/api/projects/"+strconv.Itoa(project)+"/export", q, nil, &tasks)
	return tasks, err
}

// webhookActions are the events a webhook can be sent for, and
// orgOnlyActions those a project's webhook cannot have (WebhookAction.ACTIONS
// and validate_actions in label_studio/webhooks/models.py).
var (
	webhookActions = []string{
		"PROJECT_CREATED", "PROJECT_UPDATED", "PROJECT_DELETED",
		"TASKS_CREATED", "TASKS_DELETED",
		"ANNOTATION_CREATED", "ANNOTATIONS_CREATED", "ANNOTATION_UPDATED", "ANNOTATIONS_DELETED",
		"LABEL_LINK_CREATED", "LABEL_LINK_UPDATED", "LABEL_LINK_DELETED",
	}
	orgOnlyActions = []string{"PROJECT_CREATED", "PROJECT_DELETED"}
	// webhookHeaderName and maxWebhookHeaders are HEADERS_SCHEMA of
	// label_studio/webhooks/models.py.
	webhookHeaderName = regexp.MustCompile(`^[a-zA-Z0-9-_]+$`)
)

const maxWebhookHeaders = 10

// CreateWebhook registers a webhook (POST /api/webhooks/). Its actions,
// headers and URL are checked as Label Studio checks them, and a webhook
// that would never be sent (no actions and SendForAllActions false) or
// whose actions Label Studio would ignore (SendForAllActions true) is
// refused.
func (c *Client) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	var errs field.ErrorList
	if err := checkHTTPURL(field.NewPath("url"), w.URL, "where Label Studio posts (pass credentials in headers)"); err != nil {
		errs = append(errs, err)
	}
	switch {
	case w.SendForAllActions && len(w.Actions) > 0:
		errs = append(errs, field.Forbidden(field.NewPath("actions"), "Label Studio ignores them when sendForAllActions is true"))
	case !w.SendForAllActions && len(w.Actions) == 0:
		errs = append(errs, field.Required(field.NewPath("actions"), "a webhook with no actions and sendForAllActions false is never sent"))
	}
	for i, a := range w.Actions {
		p := field.NewPath("actions").Index(i)
		switch {
		case !slices.Contains(webhookActions, a):
			errs = append(errs, field.NotSupported(p, a, webhookActions))
		case w.Project != 0 && slices.Contains(orgOnlyActions, a):
			errs = append(errs, field.Forbidden(p, a+" is an organization webhook's action, not a project's"))
		}
	}
	if len(w.Headers) > maxWebhookHeaders {
		errs = append(errs, field.TooMany(field.NewPath("headers"), len(w.Headers), maxWebhookHeaders))
	}
	for _, k := range sortedKeys(w.Headers) {
		if !webhookHeaderName.MatchString(k) {
			errs = append(errs, field.Invalid(field.NewPath("headers").Key(k), k, "must be letters, digits, - and _"))
		}
		if strings.ContainsFunc(w.Headers[k], func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			// Label Studio stores it, and its requests refuse the header
			// on every call; the value is often a secret, so it is not shown.
			errs = append(errs, field.Invalid(field.NewPath("headers").Key(k), "(value not shown)", "must not hold line breaks or control characters"))
		}
	}
	if len(errs) > 0 {
		return Webhook{}, fmt.Errorf("label studio create webhook: %w", errs.ToAggregate())
	}
	var out Webhook
	err := c.do(ctx, "create webhook", http.MethodPost, "/api/webhooks/", nil, w, &out)
	return out, err
}

// ListWebhooks returns the webhooks of a project (GET /api/webhooks/?project=).
func (c *Client) ListWebhooks(ctx context.Context, project int) ([]Webhook, error) {
	var out []Webhook
	err := c.do(ctx, "list webhooks", http.MethodGet, "/api/webhooks/", url.Values{"project": {strconv.Itoa(project)}}, nil, &out)
	return out, err
}

// DeleteWebhook removes a webhook.
func (c *Client) DeleteWebhook(ctx context.Context, id int) error {
	return c.do(ctx, "delete webhook", http.MethodDelete, "/api/webhooks/"+strconv.Itoa(id)+"/", nil, nil, nil)
}

// ConnectOption configures ConnectBackend.
type ConnectOption interface{ applyConnect(*mlBackendRequest) }

type connectOptionFunc func(*mlBackendRequest)

func (f connectOptionFunc) applyConnect(r *mlBackendRequest) { f(r) }

// BackendBasicAuth makes Label Studio call the ML backend with HTTP basic
// auth (auth_method BASIC_AUTH), as a Backend made with BasicAuth, or an
// MLBackend given BasicAuth, requires. The password is sent to
// Label Studio only, never printed.
func BackendBasicAuth(user, password string) ConnectOption {
	return connectOptionFunc(func(r *mlBackendRequest) {
		r.AuthMethod, r.BasicAuthUser, r.BasicAuthPass = "BASIC_AUTH", user, password
	})
}

// mlBackendRequest is the body of POST /api/ml/ (MlCreateRequest in
// label-studio-sdk 1.0.5's .mock/definition/ml.yml, generated from Label
// Studio's API of August 2024).
type mlBackendRequest struct {
	Project       int    `json:"project"`
	Title         string `json:"title,omitempty"`
	URL           string `json:"url"`
	IsInteractive bool   `json:"is_interactive"`
	AuthMethod    string `json:"auth_method,omitempty"`
	BasicAuthUser string `json:"basic_auth_user,omitempty"`
	BasicAuthPass string `json:"basic_auth_pass,omitempty"`
}

// ConnectBackend connects an ML backend to a project (POST /api/ml/; the
// path is api/ml/ in label_studio/ml/urls.py), so Label Studio asks it for
// predictions; interactive enables pre-annotation while labeling. Label
// Studio checks the backend's /health and /setup when it connects.
func (c *Client) ConnectBackend(ctx context.Context, project int, title, backendURL string, interactive bool, opts ...ConnectOption) error {
	body := mlBackendRequest{Project: project, Title: title, URL: backendURL, IsInteractive: interactive, AuthMethod: "NONE"}
	for _, o := range opts {
		if o != nil {
			o.applyConnect(&body)
		}
	}
	var errs field.ErrorList
	if project <= 0 {
		errs = append(errs, field.Required(field.NewPath("project"), "the project's id"))
	}
	if err := checkHTTPURL(field.NewPath("url"), backendURL, "the backend's URL, such as label.BackendURL gives; for credentials use label.BackendBasicAuth"); err != nil {
		errs = append(errs, err)
	}
	if body.AuthMethod == "BASIC_AUTH" && (body.BasicAuthUser == "" || body.BasicAuthPass == "") {
		errs = append(errs, field.Required(field.NewPath("basicAuth"), "both a user and a password"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("label studio connect ml backend: %w", errs.ToAggregate())
	}
	return c.do(ctx, "connect ml backend", http.MethodPost, "/api/ml/", nil, body, nil)
}

// ConnectS3 adds an S3 import storage to a project (POST
// /api/storages/s3/, io_storages/urls.py);
// SyncS3 then imports its objects as tasks. The bucket must be a bucket's
// name, S3Endpoint an http or https URL without credentials (boto3's
// endpoint_url; keys belong in the Studio pod's environment) and
// PresignTTL not negative (a PositiveSmallIntegerField in
// io_storages/s3/models.py); a refusal never repeats a password.
func (c *Client) ConnectS3(ctx context.Context, s S3Storage) (S3Storage, error) {
	var errs field.ErrorList
	if s.Project == 0 {
		errs = append(errs, field.Required(field.NewPath("project"), ""))
	}
	if s.Bucket == "" {
		errs = append(errs, field.Required(field.NewPath("bucket"), ""))
	}
	if s.RegexFilter == "" {
		errs = append(errs, field.Required(field.NewPath("regexFilter"), "Label Studio imports no object without one (\".*\" for all)"))
	}
	if strings.ContainsAny(s.Bucket, "/:@ \t\n") {
		errs = append(errs, field.Invalid(field.NewPath("bucket"), urlcheck.Redact(s.Bucket), "must be a bucket's name, not a URL or a path (the path goes in Prefix)"))
	}
	if s.S3Endpoint != "" {
		// boto3 takes it as endpoint_url, which needs a scheme; keys go in
		// the pod's environment, never in the storage Label Studio stores.
		if err := checkHTTPURL(field.NewPath("s3Endpoint"), s.S3Endpoint, "the S3 API's URL, such as http://minio:9000"); err != nil {
			errs = append(errs, err)
		}
	}
	if s.PresignTTL < 0 {
		errs = append(errs, field.Invalid(field.NewPath("presignTTL"), s.PresignTTL, "must not be negative (minutes; 0 is Label Studio's default)"))
	}
	if len(errs) > 0 {
		return S3Storage{}, fmt.Errorf("label studio connect s3 storage: %w", errs.ToAggregate())
	}
	var out S3Storage
	err := c.do(ctx, "connect s3 storage", http.MethodPost, "/api/storages/s3/", nil, s, &out)
	return out, err
}

// SyncS3 imports the objects of an S3 import storage as tasks
// (POST /api/storages/s3/{id}/sync).
func (c *Client) SyncS3(ctx context.Context, id int) error {
	return c.do(ctx, "sync s3 storage", http.MethodPost, "/api/storages/s3/"+strconv.Itoa(id)+"/sync", nil, nil, nil)
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// validateResults refuses the numbers JSON cannot carry (NaN, ±Inf) in
// results, by field, before encoding/json refuses them without saying
// where.
func validateResults(p *field.Path, results []Result) field.ErrorList {
	var errs field.ErrorList
	for i, r := range results {
		rp := p.Index(i)
		if r.Score != nil && !finite(*r.Score) {
			errs = append(errs, field.Invalid(rp.Child("score"), *r.Score, "must be a finite number"))
		}
		if b := r.Value.Box; b != nil {
			for _, f := range []struct {
				name string
				v    float64
			}{{"x", b.X}, {"y", b.Y}, {"width", b.Width}, {"height", b.Height}, {"rotation", b.Rotation}} {
				if !finite(f.v) {
					errs = append(errs, field.Invalid(rp.Child("value", f.name), f.v, "must be a finite number"))
				}
			}
		}
	}
	return errs
}
