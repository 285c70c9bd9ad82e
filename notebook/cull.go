package notebook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/timebound"
)

// Reason says why Cull stopped a notebook.
type Reason string

// Reasons for culling.
const (
	// Idle: the notebook's server (Jupyter or code-server) reported no
	// activity for longer than the idle limit.
	Idle Reason = "Idle"
	// Expired: the notebook outlived its MaxLifetime since creation or its
	// last renewal.
	Expired Reason = "Expired"
)

// Culled is one notebook Cull stopped.
type Culled struct {
	Namespace, Name string
	IDE             IDE
	Reason          Reason
	// Since is the server's last activity (Idle) or the creation or
	// renewal time the lifetime counts from (Expired).
	Since   time.Time
	Message string
}

func (c Culled) String() string {
	return fmt.Sprintf("%s/%s %s: %s", c.Namespace, c.Name, c.Reason, c.Message)
}

// CullOption changes how Cull works: HTTPClient, FindServiceURL, Clock,
// CullDryRun.
type CullOption interface{ applyCull(*cullOptions) }

type cullOptionFunc func(*cullOptions)

func (f cullOptionFunc) applyCull(o *cullOptions) { f(o) }

type cullOptions struct {
	httpClient *http.Client
	serviceURL func(*corev1.Service) (string, error)
	now        func() time.Time
	dryRun     bool
}

// HTTPClient sets the client that reads the servers' status (default: one
// with a ten-second timeout).
func HTTPClient(hc *http.Client) CullOption {
	return cullOptionFunc(func(o *cullOptions) { o.httpClient = hc })
}

// FindServiceURL replaces how the address of a notebook's UI Service is
// found (default ServiceURL, which needs cluster DNS): tests and programs
// outside the cluster point it at a port-forward or a test server. The
// returned URL is scheme://host[:port] with no path; Cull appends
// Jupyter's base URL and api/status, or code-server's /healthz.
func FindServiceURL(f func(svc *corev1.Service) (string, error)) CullOption {
	return cullOptionFunc(func(o *cullOptions) { o.serviceURL = f })
}

// Clock sets the clock Cull compares times with (default time.Now).
func Clock(now func() time.Time) CullOption {
	return cullOptionFunc(func(o *cullOptions) { o.now = now })
}

type cullFlag int

func (cullFlag) applyCull(o *cullOptions) { o.dryRun = true }

// CullDryRun reports what Cull would stop without stopping anything.
const CullDryRun cullFlag = 0

// ServiceURL is the in-cluster address of a notebook's UI Service:
// http://<name>.<namespace>.svc:<port of the port named "http">.
func ServiceURL(svc *corev1.Service) (string, error) {
	for _, p := range svc.Spec.Ports {
		if p.Name == PortName {
			return "http://" + svc.Name + "." + svc.Namespace + ".svc:" + strconv.Itoa(int(p.Port)), nil
		}
	}
	return "", fmt.Errorf("service %s/%s has no port named %q", svc.Namespace, svc.Name, PortName)
}

// Cull stops the notebooks of namespace (every namespace when empty) that
// are idle or expired, and returns what it stopped and why.
//
// Any notebook carrying AnnotationMaxLifetime is expired once that long has
// passed since AnnotationRenewedAt, or since its creation when it was never
// renewed. Expiry is judged first and needs no network.
//
// A running, ready notebook is idle when its server reports no activity for
// longer than idle; idle <= 0 turns idle culling off. Each IDE is asked
// through its UI Service (see FindServiceURL):
//
//   - Jupyter: last_activity from <base URL>api/status and the kernels of
//     <base URL>api/kernels (Jupyter Server's REST API), authenticated with
//     the token from the notebook's own secretKeyRef, sent in the
//     Authorization header and never logged or returned. A kernel whose
//     execution_state is busy (or starting, restarting: anything but idle
//     and dead) counts as activity now, as in Kubeflow's culler: a long
//     cell that prints nothing leaves last_activity at its start. Jupyter
//     Server 1.23 can report a new kernel as starting until the kernel's
//     next status message when its own iopub subscription missed the
//     first ones (seen on the test cluster), so a kernel that a client
//     started and never used again keeps its notebook running: Cull errs
//     on the side of a cell it cannot see.
//   - VS Code: lastHeartbeat from code-server's GET /healthz, which
//     code-server serves without authentication, so the password is neither
//     read nor sent. code-server's heart beats on every request but
//     /healthz and once a minute while any connection is open, so an open
//     browser tab counts as activity. Status "alive" (a beat within
//     code-server's last minute) counts as activity now, whatever the
//     clocks say; "expired" is judged by lastHeartbeat. A lastHeartbeat of
//     0 means no request since code-server started, and the quiet time
//     counts from when the pod's notebook container started (which needs
//     get on pods).
//   - RStudio: open-source RStudio Server has no activity endpoint to ask.
//     The /health-check endpoint with idle-seconds (rserver.conf
//     server-health-check-enabled) is a Posit Workbench feature, absent
//     from the open-source rserver's options, and rserver's session routes
//     (/rpc, /events, content) want the signed-in user's cookie, which
//     only its login form issues. RStudio notebooks are therefore only
//     expired (MaxLifetime), never culled for idleness.
//
// A notebook whose status cannot be read is left running and its error is
// returned, naming the notebook, joined with the others, after every
// notebook has been looked at. So is one whose times cannot be judged: a
// lifetime counted from an unknown creation time, a renewal or a last
// activity that is the zero time or outside 1970–2262 (a placeholder such
// as year 9999), which would otherwise cull it at once or never.
//
// A nil c, a nil HTTP client, service URL function or clock given as an
// option, and a clock that reads such a time are errors; nil options are
// ignored.
func Cull(ctx context.Context, c client.Client, namespace string, idle time.Duration, opts ...CullOption) ([]Culled, error) {
	o := cullOptions{
		httpClient: &http.Client{Timeout: 10 * time.Second},
		serviceURL: ServiceURL,
		now:        time.Now,
	}
	for _, opt := range opts {
		if opt != nil {
			opt.applyCull(&o)
		}
	}
	var errs []error
	if c == nil {
		errs = append(errs, errors.New("client: must not be nil"))
	}
	if o.httpClient == nil {
		errs = append(errs, errors.New("HTTPClient: client must not be nil"))
	}
	if o.serviceURL == nil {
		errs = append(errs, errors.New("FindServiceURL: function must not be nil"))
	}
	if o.now == nil {
		errs = append(errs, errors.New("Clock: clock must not be nil"))
	} else if err := timebound.Check("Clock: now", o.now()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("cull notebooks: %w", err)
	}
	list := &appsv1.StatefulSetList{}
	listOpts := []client.ListOption{client.MatchingLabels{cube.LabelKind: Kind, cube.LabelManagedBy: cube.ManagedBy}}
	if namespace != "" {
		listOpts = append(listOpts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, list, listOpts...); err != nil {
		return nil, fmt.Errorf("cull notebooks: list statefulsets: %w", err)
	}
	var culled []Culled
	for i := range list.Items {
		sts := &list.Items[i]
		if !running(sts) {
			continue
		}
		verdict, err := judge(ctx, c, sts, idle, &o)
		if err != nil {
			errs = append(errs, fmt.Errorf("cull notebook %s/%s: %w", sts.Namespace, sts.Name, err))
			continue
		}
		if verdict == nil {
			continue
		}
		if !o.dryRun {
			if err := stop(ctx, c, sts.Namespace, sts.Name, string(verdict.Reason)); err != nil {
				errs = append(errs, fmt.Errorf("cull notebook %s/%s: %w", sts.Namespace, sts.Name, err))
				continue
			}
		}
		culled = append(culled, *verdict)
	}
	return culled, errors.Join(errs...)
}

// running reports whether the StatefulSet asks for its pod.
func running(sts *appsv1.StatefulSet) bool {
	return sts.Spec.Replicas == nil || *sts.Spec.Replicas > 0
}

// judge decides whether one running notebook is to be stopped: expiry
// first (it needs no network), then, for a ready server whose IDE reports
// activity, how long it has been quiet.
func judge(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, idle time.Duration, o *cullOptions) (*Culled, error) {
	now := o.now()
	if err := timebound.Check("clock", now); err != nil {
		return nil, err
	}
	base := Culled{Namespace: sts.Namespace, Name: sts.Name, IDE: IDE(sts.Labels[LabelIDE])}

	if raw, ok := sts.Annotations[AnnotationMaxLifetime]; ok {
		lifetime, err := time.ParseDuration(raw)
		if err != nil || lifetime <= 0 {
			return nil, fmt.Errorf("annotation %s=%q is not a positive duration", AnnotationMaxLifetime, raw)
		}
		from, fromName := sts.CreationTimestamp.Time, "creation time"
		if renewed, ok := sts.Annotations[AnnotationRenewedAt]; ok {
			if from, err = time.Parse(time.RFC3339, renewed); err != nil {
				return nil, fmt.Errorf("annotation %s=%q is not an RFC 3339 time", AnnotationRenewedAt, renewed)
			}
			fromName = "annotation " + AnnotationRenewedAt
		}
		if err := timebound.Check(fromName, from); err != nil {
			return nil, fmt.Errorf("lifetime not judged: %w", err)
		}
		if age := now.Sub(from); age > lifetime {
			base.Reason, base.Since = Expired, from
			base.Message = fmt.Sprintf("running %s since %s, longer than its lifetime of %s", age.Round(time.Second), from.UTC().Format(time.RFC3339), lifetime)
			return &base, nil
		}
	}

	read, reports := activityReaders[base.IDE]
	if idle <= 0 || !reports || sts.Status.ReadyReplicas < 1 {
		// RStudio reports no activity, and only a ready server answers.
		return nil, nil
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: sts.Name}, svc); err != nil {
		return nil, fmt.Errorf("get service: %w", err)
	}
	root, err := o.serviceURL(svc)
	if err != nil {
		return nil, fmt.Errorf("service address: %w", err)
	}
	last, err := read(ctx, c, sts, strings.TrimSuffix(root, "/"), o)
	if err != nil {
		return nil, err
	}
	if err := timebound.Check("last activity", last); err != nil {
		return nil, fmt.Errorf("idleness not judged: %w", err)
	}
	if quiet := now.Sub(last); quiet > idle {
		base.Reason, base.Since = Idle, last
		base.Message = fmt.Sprintf("no activity for %s since %s, longer than the limit of %s", quiet.Round(time.Second), last.UTC().Format(time.RFC3339), idle)
		return &base, nil
	}
	return nil, nil
}

// activityReader asks a notebook's server, reached at root (scheme://host:port
// of its UI Service), when it was last active.
type activityReader func(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, root string, o *cullOptions) (time.Time, error)

// activityReaders are the IDEs whose servers report activity. RStudio Server
// (open source) has none to ask; see Cull.
var activityReaders = map[IDE]activityReader{
	IDEJupyter: jupyterActivity,
	IDEVSCode:  codeServerActivity,
}

// maxStatusBody bounds what Cull reads of a status response.
const maxStatusBody = 1 << 20

// getStatus GETs url with header and decodes its JSON body into v. The
// header (a credential) appears in no error.
func getStatus(ctx context.Context, hc *http.Client, url string, header http.Header, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("read status: %w", err)
	}
	for k, vs := range header {
		req.Header[k] = vs
	}
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("read status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return fmt.Errorf("read status from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read status from %s: %s", url, resp.Status)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("read status from %s: %w", url, err)
	}
	return nil
}

// jupyterStatus is the body of GET /api/status in Jupyter Server's REST API.
type jupyterStatus struct {
	Started      string `json:"started"`
	LastActivity string `json:"last_activity"`
	Connections  int    `json:"connections"`
	Kernels      int    `json:"kernels"`
}

// jupyterKernel is one entry of GET /api/kernels in Jupyter Server's REST
// API (jupyter_server/services/kernels/handlers.py MainKernelHandler, the
// model of kernelmanager.py kernel_model): execution_state is "starting",
// "idle", "busy", "restarting" or "dead"; last_activity is the last message
// the kernel sent on its iopub channel.
type jupyterKernel struct {
	ID             string `json:"id"`
	Name           string `json:"name"`
	LastActivity   string `json:"last_activity"`
	ExecutionState string `json:"execution_state"`
	Connections    int    `json:"connections"`
}

// jupyterActivity reads last_activity from <base URL>api/status and the
// kernels from <base URL>api/kernels, authenticated with the notebook's
// token. A kernel that is not idle (busy in a cell, starting, restarting)
// is activity now, as Kubeflow's notebook-controller culler judges it
// (components/notebook-controller/pkg/culler/culler.go allKernelsAreIdle):
// a cell that computes for hours without output sends nothing on iopub, so
// its last_activity stays at the cell's start. A dead kernel is not
// activity (Kubeflow's allKernelsAreIdle counts it as not idle, so a dead
// kernel keeps a Kubeflow notebook running forever; here it runs nothing
// and lets the notebook be culled). Otherwise the latest of the server's
// and its kernels' last_activity counts.
func jupyterActivity(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, root string, o *cullOptions) (time.Time, error) {
	token, err := tokenOf(ctx, c, sts)
	if err != nil {
		return time.Time{}, err
	}
	baseURL := sts.Annotations[AnnotationBaseURL]
	if baseURL == "" {
		baseURL = "/"
	}
	auth := http.Header{"Authorization": {"token " + token}}
	url := root + baseURL + "api/status"
	var st jupyterStatus
	if err := getStatus(ctx, o.httpClient, url, auth, &st); err != nil {
		return time.Time{}, err
	}
	last, err := time.Parse(time.RFC3339Nano, st.LastActivity)
	if err != nil {
		return time.Time{}, fmt.Errorf("read status from %s: last_activity %q is not an RFC 3339 time", url, st.LastActivity)
	}
	url = root + baseURL + "api/kernels"
	var kernels []jupyterKernel
	if err := getStatus(ctx, o.httpClient, url, auth, &kernels); err != nil {
		return time.Time{}, err
	}
	for _, k := range kernels {
		switch k.ExecutionState {
		case "dead":
			continue
		case "idle":
		default:
			return o.now(), nil
		}
		at, err := time.Parse(time.RFC3339Nano, k.LastActivity)
		if err != nil {
			return time.Time{}, fmt.Errorf("read status from %s: kernel %s last_activity %q is not an RFC 3339 time", url, k.ID, k.LastActivity)
		}
		if at.After(last) {
			last = at
		}
	}
	return last, nil
}

// codeServerHealth is the body of code-server's GET /healthz
// (src/node/routes/health.ts): status is "alive" while its heart has beaten
// within the last minute, else "expired"; lastHeartbeat is when it last
// beat, in Unix milliseconds, 0 before the first beat.
type codeServerHealth struct {
	Status        string `json:"status"`
	LastHeartbeat *int64 `json:"lastHeartbeat"`
}

// codeServerActivity reads lastHeartbeat from code-server's /healthz.
// code-server serves it without authentication, so the password is neither
// read nor sent; requests to /healthz do not count as activity, every other
// request does, and so does every minute with a connection open.
func codeServerActivity(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, root string, o *cullOptions) (time.Time, error) {
	// code-server answers at the root of its listener: it has no base-path
	// option (--abs-proxy-base-path only prefixes its /absproxy/<port>/
	// routes) and cube forbids BaseURL for it.
	url := root + servers[IDEVSCode].healthPath
	var h codeServerHealth
	if err := getStatus(ctx, o.httpClient, url, nil, &h); err != nil {
		return time.Time{}, err
	}
	if h.LastHeartbeat == nil {
		return time.Time{}, fmt.Errorf("read status from %s: no lastHeartbeat", url)
	}
	switch {
	case h.Status == "alive":
		// Active within the minute by code-server's own clock, which
		// overrides any skew between its clock and Cull's.
		return o.now(), nil
	case h.Status != "expired":
		return time.Time{}, fmt.Errorf("read status from %s: status %q is neither \"alive\" nor \"expired\"", url, h.Status)
	case *h.LastHeartbeat < 0:
		return time.Time{}, fmt.Errorf("read status from %s: lastHeartbeat %d is negative", url, *h.LastHeartbeat)
	case *h.LastHeartbeat == 0:
		// Nobody has used this server since it started: quiet since then.
		return containerStart(ctx, c, sts)
	}
	return time.UnixMilli(*h.LastHeartbeat).UTC(), nil
}

// containerStart is when the notebook container of the StatefulSet's pod
// last started, from the pod's status as the kubelet writes it.
func containerStart(ctx context.Context, c client.Client, sts *appsv1.StatefulSet) (time.Time, error) {
	name := sts.Name + "-0"
	p := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: name}, p); err != nil {
		return time.Time{}, fmt.Errorf("no heartbeat yet: get pod: %w", err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == ContainerName && cs.State.Running != nil {
			return cs.State.Running.StartedAt.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("no heartbeat yet: pod %s has no running %s container", name, ContainerName)
}

// tokenOf reads the Jupyter token from the Secret the notebook's
// JUPYTER_TOKEN secretKeyRef names: the pod's own source of truth.
func tokenOf(ctx context.Context, c client.Client, sts *appsv1.StatefulSet) (string, error) {
	var ref *corev1.SecretKeySelector
	for _, ctr := range sts.Spec.Template.Spec.Containers {
		for _, e := range ctr.Env {
			if e.Name == servers[IDEJupyter].credentialEnv && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				ref = e.ValueFrom.SecretKeyRef
			}
		}
	}
	if ref == nil {
		return "", fmt.Errorf("no %s secretKeyRef in the pod template", servers[IDEJupyter].credentialEnv)
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: ref.Name}, secret); err != nil {
		return "", fmt.Errorf("get token secret: %w", err)
	}
	token, ok := secret.Data[ref.Key]
	if !ok || len(token) == 0 {
		return "", fmt.Errorf("token secret %s has no key %q", ref.Name, ref.Key)
	}
	return string(token), nil
}
