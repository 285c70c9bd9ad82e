package serve

import (
	"context"
	"fmt"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/internal/podspec"
)

// Client waits until rel, the release Apply returned for s, is Ready and
// returns a client for s's OpenAI-compatible API: at URL(s), in the
// release's namespace when s names none, for the model name the engine
// serves (ServedModelName, or the name cube gives it), with opts after
// those defaults (an API key, a timeout, an HTTP client):
//
//	rel, err := c.Apply(ctx, svc)
//	chat, err := serve.Client(ctx, rel, svc, inference.APIKeyFromEnv("QWEN_API_KEY"))
//	resp, err := chat.Chat(ctx, inference.UserMessage("Hello"))
//
// URL(s) is the in-cluster address (http://<name>-api.<namespace>:<port>):
// it resolves and answers only inside the cluster, from a pod. From outside
// (a laptop, CI), forward the Service's port and give that address to
// ClientAt instead:
//
//	kubectl port-forward -n team-a svc/qwen-chat-api 8000:8000
//	chat, err := serve.ClientAt(ctx, rel, svc, "http://127.0.0.1:8000")
//
// The wait is rel.Wait(ctx, cube.Ready): bound it with ctx (without a
// deadline, cube.DefaultWaitTimeout applies); a release that fails ends it
// with cube.ErrFailed. Triton serves the KServe protocol, not OpenAI's, and
// is refused.
func Client(ctx context.Context, rel *cube.Release, s *Service, opts ...inference.ClientOption) (*inference.Client, error) {
	return ClientAt(ctx, rel, s, "", opts...)
}

// ClientAt is Client for the engine reached at endpoint, such as a
// port-forward from outside the cluster, a gateway, or a test server; an
// empty endpoint is URL(s).
func ClientAt(ctx context.Context, rel *cube.Release, s *Service, endpoint string, opts ...inference.ClientOption) (*inference.Client, error) {
	if err := s.unmade(); err != nil {
		return nil, fmt.Errorf("serve client: %w", err)
	}
	name := podspec.Of(&s.Handle).Name()
	if s.engine == tritonEngine || s.engine == tritonVLLMEngine {
		return nil, fmt.Errorf("serve client for %s: Triton serves the KServe v2 protocol, not the OpenAI API that package inference speaks", name)
	}
	if rel == nil {
		return nil, fmt.Errorf("serve client for %s: no release: give the release Apply returned for the service", name)
	}
	if rel.Name != name {
		return nil, fmt.Errorf("serve client for %s: release %s/%s is not this service's (its name is %q)", name, rel.Namespace, rel.Name, rel.Name)
	}
	_, r, errs := s.render()
	if len(errs) > 0 {
		return nil, fmt.Errorf("serve client for %s: %w", name, dedupe(errs).ToAggregate())
	}
	if ns := podspec.Of(&s.Handle).NamespaceName(); ns != "" && rel.Namespace != "" && ns != rel.Namespace {
		return nil, fmt.Errorf("serve client for %s: release %s/%s is in another namespace than the service (%s)", name, rel.Namespace, rel.Name, ns)
	}
	if endpoint == "" {
		// The release knows the namespace the client applied the service
		// to when the service names none: the URL then resolves from any
		// namespace, not only the service's own.
		endpoint = s.url(rel.Namespace)
	}
	// Check the options before waiting, so that a bad one fails at once.
	all := append([]inference.ClientOption{inference.ServedModel(r.servedName)}, opts...)
	c, err := inference.NewClient(endpoint, all...)
	if err != nil {
		return nil, fmt.Errorf("serve client for %s: %w", name, err)
	}
	if _, err := rel.Wait(ctx, cube.Ready); err != nil {
		return nil, fmt.Errorf("serve client for %s: %w", name, err)
	}
	return c, nil
}
