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
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

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
