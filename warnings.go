package cube

import (
	"context"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// The API server answers some requests it accepts with warnings (the
// Warning header): a Pod Security level in warn or audit mode that a pod
// would violate, a deprecated API version, an unknown field it dropped.
// A Client made by New collects those of an Apply into Release.Warnings;
// warnings of other requests, and of every request when the rest config
// has a handler of its own, go where they went before.

type warningsKey struct{}

// warningList collects the distinct warnings of one Apply, in the order
// they arrived. Apply's requests run in parallel.
type warningList struct {
	mu   sync.Mutex
	list []string
}

func (l *warningList) add(text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.list, text) {
		l.list = append(l.list, text)
	}
}

func (l *warningList) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.list)
}

// collectWarnings returns ctx with a list that the requests made with it
// add their warnings to.
func collectWarnings(ctx context.Context) (context.Context, *warningList) {
	l := &warningList{}
	return context.WithValue(ctx, warningsKey{}, l), l
}

// warningRecorder adds a warning to the list of the request's context, if
// it has one, and passes every warning on to next.
type warningRecorder struct {
	next rest.WarningHandlerWithContext
}

func (h warningRecorder) HandleWarningHeaderWithContext(ctx context.Context, code int, agent, text string) {
	if l, ok := ctx.Value(warningsKey{}).(*warningList); ok && code == 299 {
		l.add(text)
	}
	if h.next != nil {
		h.next.HandleWarningHeaderWithContext(ctx, code, agent, text)
	}
}

// recordWarnings returns a copy of cfg whose warnings reach an Apply's
// list, then the handler cfg had (controller-runtime's logger when it had
// none, as client.New would choose).
func recordWarnings(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	var next rest.WarningHandlerWithContext
	switch {
	case cfg.WarningHandlerWithContext != nil:
		next = cfg.WarningHandlerWithContext
	case cfg.WarningHandler != nil: //nolint:staticcheck // a handler the caller set
		next = legacyWarnings{cfg.WarningHandler} //nolint:staticcheck
	default:
		next = log.NewKubeAPIWarningLogger(log.KubeAPIWarningLoggerOptions{})
	}
	cfg.WarningHandler = nil //nolint:staticcheck // replaced by the handler with context
	cfg.WarningHandlerWithContext = warningRecorder{next: next}
	return cfg
}

type legacyWarnings struct{ h rest.WarningHandler } //nolint:staticcheck

func (l legacyWarnings) HandleWarningHeaderWithContext(_ context.Context, code int, agent, text string) {
	l.h.HandleWarningHeader(code, agent, text)
}
