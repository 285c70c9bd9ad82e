package label

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/urlcheck"
)

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
