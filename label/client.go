package label

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Client calls Label Studio's REST API (1.13.1). It authenticates with a
// user's access token in "Authorization: Token <token>", the scheme of
// Django REST framework's TokenAuthentication that Label Studio keeps
// (REST_FRAMEWORK DEFAULT_AUTHENTICATION_CLASSES in
// label_studio/core/settings/base.py: jwt_auth.auth.TokenAuthenticationPhaseout).
// Calls that fail transiently (429, 502, 503, 504, or a broken connection
// on an idempotent call) are retried with backoff. A Client is safe for
// concurrent use.
type Client struct {
	base     *url.URL
	token    string
	http     *http.Client
	retries  int
	backoff  time.Duration
	pageSize int
}

// ClientOption configures NewClient.
type ClientOption interface{ applyClient(*clientOptions) }

type clientOptions struct {
	token, tokenEnv string
	tokenSet        bool
	http            *http.Client
	httpSet         bool
	retries         int
	backoff         time.Duration
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

// Retries sets how many times a transient failure is retried (default 3)
// and the first backoff, doubled each time (default 200ms).
func Retries(n int, backoff time.Duration) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.retries, o.backoff = n, backoff })
}

// PageSize sets how many items each page of a list call asks for
// (default 100, REST_FRAMEWORK PAGE_SIZE).
func PageSize(n int) ClientOption {
	return clientOptionFunc(func(o *clientOptions) { o.pageSize = n })
}

// NewClient returns a client of the Label Studio at baseURL
// ("http://studio:8080"). A token is required.
func NewClient(baseURL string, opts ...ClientOption) (*Client, error) {
	o := clientOptions{retries: 3, backoff: 200 * time.Millisecond, pageSize: 100}
	for _, opt := range opts {
		if opt != nil {
			opt.applyClient(&o)
		}
	}
	var errs field.ErrorList
	u, err := url.Parse(baseURL)
	switch {
	case strings.TrimSpace(baseURL) == "":
		errs = append(errs, field.Required(field.NewPath("baseURL"), "the URL of Label Studio, such as http://studio:8080"))
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		errs = append(errs, field.Invalid(field.NewPath("baseURL"), baseURL, "must be an http or https URL with a host"))
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		errs = append(errs, field.Invalid(field.NewPath("baseURL"), u.Redacted(), "must not carry credentials, a query or a fragment"))
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
	if o.retries < 0 {
		errs = append(errs, field.Invalid(field.NewPath("retries"), o.retries, "must not be negative"))
	}
	if o.backoff < 0 {
		errs = append(errs, field.Invalid(field.NewPath("backoff"), o.backoff.String(), "must not be negative"))
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
	return &Client{base: u, token: token, http: hc, retries: o.retries, backoff: o.backoff, pageSize: o.pageSize}, nil
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
	backoff := c.backoff
	for attempt := 0; ; attempt++ {
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
		retry := false
		var apiErr *APIError
		if err == nil {
			data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
			resp.Body.Close()
			switch {
			case readErr != nil:
				err, retry = readErr, idempotent
			case resp.StatusCode >= 300:
				apiErr = newAPIError(call, method, path, resp.StatusCode, data)
				switch resp.StatusCode {
				case http.StatusTooManyRequests, http.StatusServiceUnavailable:
					retry = true
				case http.StatusBadGateway, http.StatusGatewayTimeout:
					retry = idempotent
				}
			case out != nil && len(data) > 0:
				if err := json.Unmarshal(data, out); err != nil {
					return fmt.Errorf("label studio %s: %s %s: decode answer: %w", call, method, path, err)
				}
				return nil
			default:
				return nil
			}
		} else {
			retry = idempotent && ctx.Err() == nil
		}
		if !retry || attempt >= c.retries {
			if apiErr != nil {
				return apiErr
			}
			return fmt.Errorf("label studio %s: %s %s: %w", call, method, path, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("label studio %s: %w", call, ctx.Err())
		case <-time.After(backoff):
		}
		backoff *= 2
	}
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

// CreateProject creates a project with the rendered labeling config.
func (c *Client) CreateProject(ctx context.Context, title, description string, config *Config) (Project, error) {
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
// (http, s3://, gs://) for Label Studio to resolve through its storages.
func (c *Client) ImportTasks(ctx context.Context, project int, tasks []Task) (ImportResult, error) {
	if len(tasks) == 0 {
		return ImportResult{}, fmt.Errorf("label studio import tasks: %w", field.Required(field.NewPath("tasks"), "nothing to import"))
	}
	var errs field.ErrorList
	for i, t := range tasks {
		if len(t.Data) == 0 {
			errs = append(errs, field.Required(field.NewPath("tasks").Index(i).Child("data"), ""))
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
// predictions (fields=all), following the pages of GET /api/tasks?project=
// ({total_annotations, total_predictions, total, tasks}: TaskPagination in
// label_studio/data_manager/api.py).
func (c *Client) ListTasks(ctx context.Context, project int) ([]Task, error) {
	var all []Task
	for page := 1; ; page++ {
		var resp struct {
			Tasks []Task `json:"tasks"`
			Total int    `json:"total"`
		}
		q := url.Values{"project": {strconv.Itoa(project)}, "fields": {"all"}, "page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(c.pageSizeOr())}}
		if err := c.do(ctx, "list tasks", http.MethodGet, "/api/tasks", q, nil, &resp); err != nil {
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
	if p.Task == 0 {
		return Prediction{}, fmt.Errorf("label studio create prediction: %w", field.Required(field.NewPath("task"), ""))
	}
	var out Prediction
	err := c.do(ctx, "create prediction", http.MethodPost, "/api/predictions/", nil, p, &out)
	return out, err
}

// CreateAnnotation adds an annotation to a task.
func (c *Client) CreateAnnotation(ctx context.Context, task int, a Annotation) (Annotation, error) {
	var out Annotation
	err := c.do(ctx, "create annotation", http.MethodPost, "/api/tasks/"+strconv.Itoa(task)+"/annotations/", nil, a, &out)
	return out, err
}

// Export returns every task of a project with its annotations in Label
// Studio's JSON export (GET /api/projects/{id}/export?exportType=JSON,
// label_studio/data_export/api.py ExportAPI). Convert it with SFT,
// PreferencePairs and KTO.
func (c *Client) Export(ctx context.Context, project int) ([]Task, error) {
	var tasks []Task
	q := url.Values{"exportType": {"JSON"}, "download_all_tasks": {"true"}}
	err := c.do(ctx, "export", http.MethodGet, "/api/projects/"+strconv.Itoa(project)+"/export", q, nil, &tasks)
	return tasks, err
}

// CreateWebhook registers a webhook (POST /api/webhooks/).
func (c *Client) CreateWebhook(ctx context.Context, w Webhook) (Webhook, error) {
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Webhook{}, fmt.Errorf("label studio create webhook: %w", field.Invalid(field.NewPath("url"), w.URL, "must be an http or https URL"))
	}
	var out Webhook
	err = c.do(ctx, "create webhook", http.MethodPost, "/api/webhooks/", nil, w, &out)
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

// ConnectBackend connects an ML backend to a project (POST /api/ml,
// label_studio/ml/api.py MLBackendListAPI), so Label Studio asks it for
// predictions; interactive enables pre-annotation while labeling.
func (c *Client) ConnectBackend(ctx context.Context, project int, title, backendURL string, interactive bool) error {
	body := map[string]any{"project": project, "title": title, "url": backendURL, "is_interactive": interactive}
	return c.do(ctx, "connect ml backend", http.MethodPost, "/api/ml", nil, body, nil)
}

// ConnectS3 adds an S3 import storage to a project (POST /api/storages/s3);
// SyncS3 then imports its objects as tasks.
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
	if len(errs) > 0 {
		return S3Storage{}, fmt.Errorf("label studio connect s3 storage: %w", errs.ToAggregate())
	}
	var out S3Storage
	err := c.do(ctx, "connect s3 storage", http.MethodPost, "/api/storages/s3", nil, s, &out)
	return out, err
}

// SyncS3 imports the objects of an S3 import storage as tasks
// (POST /api/storages/s3/{id}/sync).
func (c *Client) SyncS3(ctx context.Context, id int) error {
	return c.do(ctx, "sync s3 storage", http.MethodPost, "/api/storages/s3/"+strconv.Itoa(id)+"/sync", nil, nil, nil)
}
