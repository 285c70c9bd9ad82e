package label

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

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
