package testenv

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// StopAPIServer kills kube-apiserver (SIGKILL, as in a crash) and waits
// until it is gone; etcd keeps running, so everything stored survives.
// Clients of e get connection errors until StartAPIServer. Only the
// environment of Get can be stopped: the test cluster's controllers would
// not survive it. Safe to call from any goroutine (a Proxy hook).
func (e *Env) StopAPIServer() error {
	if e.controllers || e.servers == nil {
		return errors.New("testenv: only the test API server of testenv.Get can be stopped, not the test cluster")
	}
	e.restartMu.Lock()
	defer e.restartMu.Unlock()
	e.servers.stopAPIServer()
	return nil
}

// StartAPIServer starts kube-apiserver again after StopAPIServer, with the
// same flags, port and credentials, on the same etcd, and waits until it is
// ready: e.Config and every client made from it work again.
func (e *Env) StartAPIServer(ctx context.Context) error {
	if e.controllers || e.servers == nil {
		return errors.New("testenv: only the test API server of testenv.Get can be restarted, not the test cluster")
	}
	e.restartMu.Lock()
	defer e.restartMu.Unlock()
	if err := e.servers.startAPIServerAgain(ctx); err != nil {
		return fmt.Errorf("testenv: restart kube-apiserver: %w", err)
	}
	return nil
}

// StopAPIServerFor stops kube-apiserver and makes sure it runs again
// before tb's later cleanups (its namespaces') and the next test: when tb
// ends with the server stopped, a cleanup starts it.
func (e *Env) StopAPIServerFor(tb testing.TB) error {
	tb.Cleanup(func() {
		if !e.APIServerStopped() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		if err := e.StartAPIServer(ctx); err != nil {
			tb.Error(err)
		}
	})
	return e.StopAPIServer()
}

// APIServerStopped reports whether kube-apiserver is not running.
func (e *Env) APIServerStopped() bool {
	if e.servers == nil {
		return true
	}
	e.restartMu.Lock()
	defer e.restartMu.Unlock()
	return e.servers.apiServer.hasExited()
}

// Proxy is a reverse proxy in front of an environment's kube-apiserver
// that injects faults: it answers requests a Fault matches with an error
// status (429 with Retry-After, 500, 503…), drops their connection, ends
// watches with an expiry, or runs a hook first (stopping the server after
// the Kth write, say). Every other request goes through unchanged. Config
// points at the proxy, in plain HTTP; the proxy adds the environment's
// credentials, so a client of Config acts as its admin.
//
// The proxy stands for what sits between a client and a real API server
// (a load balancer, the server's own priority and fairness): when the
// server is stopped, the proxy drops each connection, as a balancer with
// no backend does.
type Proxy struct {
	// Config is a rest.Config for the proxy, without client-side
	// throttling.
	Config *rest.Config

	server *httptest.Server
	proxy  *httputil.ReverseProxy

	mu     sync.Mutex
	faults []*Fault
	log    []Request
}

// Request is one request the proxy received, and what it did.
type Request struct {
	Method string
	Path   string
	Watch  bool
	// Fault is the fault that answered it (its Name), "" when it went
	// through.
	Fault string
}

// Fault is a fault the proxy injects in the requests Match accepts (every
// request when nil): after letting Skip of them through, it acts on the
// next Times (every later one when Times is 0), then lets them through
// again. It either runs Hook and forwards the request, or answers it
// itself: Drop closes the connection without an answer, Expire answers a
// watch with an ERROR event "too old resource version" (410 Expired) and
// ends it, and Status answers with that code and a metav1.Status (with a
// Retry-After header of RetryAfter, rounded up to seconds, when set).
// With Forward, the request reaches the server first and its answer is
// replaced by the fault's: the server did the work, the client does not
// know.
type Fault struct {
	Name       string
	Match      func(*http.Request) bool
	Skip       int
	Times      int
	Hook       func(*http.Request)
	Drop       bool
	Expire     bool
	Status     int
	RetryAfter time.Duration
	Forward    bool

	seen, hits atomic.Int64
}

// Hits reports how many requests f acted on.
func (f *Fault) Hits() int { return int(f.hits.Load()) }

// take reports whether f acts on a request it matches, counting it.
func (f *Fault) take(r *http.Request) bool {
	if f.Match != nil && !f.Match(r) {
		return false
	}
	n := int(f.seen.Add(1))
	if n <= f.Skip || (f.Times > 0 && n > f.Skip+f.Times) {
		return false
	}
	f.hits.Add(1)
	return true
}

// Writes matches the writes (POST, PUT, PATCH, DELETE) of resource (the
// plural, as in the URL path: "deployments"), or of every resource when
// resource is "".
func Writes(resource string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			return false
		}
		return resource == "" || pathResource(r.URL.Path) == resource
	}
}

// Patches matches the PATCH requests (server-side apply) of resource, or
// of every resource when resource is "".
func Patches(resource string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return r.Method == http.MethodPatch && (resource == "" || pathResource(r.URL.Path) == resource)
	}
}

// Watches matches the watch requests of resource, or of every resource
// when resource is "".
func Watches(resource string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return isWatch(r) && (resource == "" || pathResource(r.URL.Path) == resource)
	}
}

// Named matches the requests for the object name of resource.
func Named(resource, name string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		for i := 0; i+1 < len(parts); i++ {
			if parts[i] == resource && parts[i+1] == name {
				return true
			}
		}
		return false
	}
}

// pathResource is the resource a request's path names: the segment after
// "namespaces/<ns>", or after the group version ("/api/v1/namespaces" is
// namespaces).
func pathResource(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		rest = parts[3:]
	default:
		return ""
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		return rest[2]
	}
	if len(rest) > 0 {
		return rest[0]
	}
	return ""
}

func isWatch(r *http.Request) bool {
	w := r.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// Proxy starts a fault proxy in front of e's kube-apiserver, stopped when
// tb ends.
func (e *Env) Proxy(tb testing.TB) *Proxy {
	tb.Helper()
	target, err := url.Parse(e.Config.Host)
	if err != nil {
		tb.Fatalf("testenv: proxy: %v", err)
	}
	backend, err := rest.TransportFor(e.Config)
	if err != nil {
		tb.Fatalf("testenv: proxy: %v", err)
	}
	p := &Proxy{}
	p.proxy = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = target.Host
		},
		Transport:     backend,
		FlushInterval: -1, // watches stream
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			drop(w) // no backend: as a balancer with none does
		},
	}
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	tb.Cleanup(p.server.Close)
	p.Config = &rest.Config{Host: p.server.URL, QPS: -1}
	return p
}

// Inject adds f; it acts from the next request on, before the faults
// injected after it.
func (p *Proxy) Inject(f *Fault) *Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = append(p.faults, f)
	return f
}

// Clear removes every fault.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.faults = nil
}

// Requests returns what the proxy received so far, in order.
func (p *Proxy) Requests() []Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Request(nil), p.log...)
}

// Count counts the requests received so far that match accepts.
func (p *Proxy) Count(accept func(Request) bool) int {
	n := 0
	for _, r := range p.Requests() {
		if accept(r) {
			n++
		}
	}
	return n
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	var fault *Fault
	for _, f := range p.faults {
		if f.take(r) {
			fault = f
			break
		}
	}
	entry := Request{Method: r.Method, Path: r.URL.Path, Watch: isWatch(r)}
	if fault != nil {
		entry.Fault = fault.Name
		if entry.Fault == "" {
			entry.Fault = "fault"
		}
	}
	p.log = append(p.log, entry)
	p.mu.Unlock()

	switch {
	case fault == nil:
		p.proxy.ServeHTTP(w, r)
	case fault.Hook != nil && !fault.Drop && !fault.Expire && fault.Status == 0:
		fault.Hook(r)
		p.proxy.ServeHTTP(w, r)
	default:
		if fault.Hook != nil {
			fault.Hook(r)
		}
		if fault.Forward {
			rec := httptest.NewRecorder()
			p.proxy.ServeHTTP(rec, r)
		}
		switch {
		case fault.Drop:
			drop(w)
		case fault.Expire:
			expire(w)
		default:
			answer(w, fault.Status, fault.RetryAfter)
		}
	}
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // the server closes the connection
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close()
}

// expire answers a watch as kube-apiserver does when the watch's
// resourceVersion is older than what it keeps: one ERROR event carrying
// a 410 Expired Status, then the end of the stream.
func expire(w http.ResponseWriter) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "too old resource version: 1 (2) (injected by the testenv proxy)",
		Reason:   metav1.StatusReasonExpired,
		Code:     http.StatusGone,
	}
	raw, _ := json.Marshal(status)
	event, _ := json.Marshal(metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: raw}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(event, '\n'))
}

// answer writes a Status with code, as kube-apiserver writes errors.
func answer(w http.ResponseWriter, code int, retryAfter time.Duration) {
	status := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  fmt.Sprintf("%s (injected by the testenv proxy)", http.StatusText(code)),
		Reason:   reasonFor(code),
		Code:     int32(code),
	}
	if retryAfter > 0 {
		seconds := int((retryAfter + time.Second - 1) / time.Second)
		w.Header().Set("Retry-After", strconv.Itoa(seconds))
		status.Details = &metav1.StatusDetails{RetryAfterSeconds: int32(seconds)}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(status)
}

func reasonFor(code int) metav1.StatusReason {
	switch code {
	case http.StatusTooManyRequests:
		return metav1.StatusReasonTooManyRequests
	case http.StatusServiceUnavailable:
		return metav1.StatusReasonServiceUnavailable
	case http.StatusGatewayTimeout:
		return metav1.StatusReasonTimeout
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusGone:
		return metav1.StatusReasonExpired
	case http.StatusInternalServerError:
		return metav1.StatusReasonInternalError
	}
	return metav1.StatusReasonUnknown
}
