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
)

// Reason says why Cull stopped a notebook.
type Reason string

// Reasons for culling.
const (
	// Idle: Jupyter reported no activity for longer than the idle limit.
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
	// Since is Jupyter's last activity (Idle) or the creation or renewal
	// time the lifetime counts from (Expired).
	Since   time.Time
	Message string
}

func (c Culled) String() string {
	return fmt.Sprintf("%s/%s %s: %s", c.Namespace, c.Name, c.Reason, c.Message)
}

// CullOption changes how Cull works.
type CullOption func(*cullOptions)

type cullOptions struct {
	httpClient *http.Client
	serviceURL func(*corev1.Service) (string, error)
	now        func() time.Time
	dryRun     bool
}

// WithHTTPClient sets the client that reads Jupyter's status (default: one
// with a ten-second timeout).
func WithHTTPClient(hc *http.Client) CullOption {
	return func(o *cullOptions) { o.httpClient = hc }
}

// WithServiceURL replaces how the address of a notebook's UI Service is
// found (default ServiceURL, which needs cluster DNS): tests and programs
// outside the cluster point it at a port-forward or a test server. The
// returned URL is scheme://host[:port] with no path; Cull appends the
// notebook's base URL and api/status.
func WithServiceURL(f func(svc *corev1.Service) (string, error)) CullOption {
	return func(o *cullOptions) { o.serviceURL = f }
}

// WithClock sets the clock Cull compares times with (default time.Now).
func WithClock(now func() time.Time) CullOption {
	return func(o *cullOptions) { o.now = now }
}

// CullDryRun reports what Cull would stop without stopping anything.
var CullDryRun CullOption = func(o *cullOptions) { o.dryRun = true }

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
// A running Jupyter notebook is idle when the last_activity its server
// reports at <base URL>api/status (Jupyter Server's REST API) is older than
// idle; Cull authenticates with the token from the notebook's own
// secretKeyRef, sent in the Authorization header and never logged or
// returned. idle <= 0 turns idle culling off. Any notebook carrying
// AnnotationMaxLifetime is expired once that long has passed since
// AnnotationRenewedAt, or since its creation when it was never renewed.
//
// A notebook whose status cannot be read is left running and its error is
// returned, joined with the others, after every notebook has been looked at.
func Cull(ctx context.Context, c client.Client, namespace string, idle time.Duration, opts ...CullOption) ([]Culled, error) {
	o := cullOptions{
		httpClient: &http.Client{Timeout: 10 * time.Second},
		serviceURL: ServiceURL,
		now:        time.Now,
	}
	for _, opt := range opts {
		opt(&o)
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
	var errs []error
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
// first (it needs no network), then Jupyter's activity.
func judge(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, idle time.Duration, o *cullOptions) (*Culled, error) {
	now := o.now()
	base := Culled{Namespace: sts.Namespace, Name: sts.Name, IDE: IDE(sts.Labels[LabelIDE])}

	if raw, ok := sts.Annotations[AnnotationMaxLifetime]; ok {
		lifetime, err := time.ParseDuration(raw)
		if err != nil || lifetime <= 0 {
			return nil, fmt.Errorf("annotation %s=%q is not a positive duration", AnnotationMaxLifetime, raw)
		}
		from := sts.CreationTimestamp.Time
		if renewed, ok := sts.Annotations[AnnotationRenewedAt]; ok {
			if from, err = time.Parse(time.RFC3339, renewed); err != nil {
				return nil, fmt.Errorf("annotation %s=%q is not an RFC 3339 time", AnnotationRenewedAt, renewed)
			}
		}
		if age := now.Sub(from); age > lifetime {
			base.Reason, base.Since = Expired, from
			base.Message = fmt.Sprintf("running %s since %s, longer than its lifetime of %s", age.Round(time.Second), from.UTC().Format(time.RFC3339), lifetime)
			return &base, nil
		}
	}

	if idle <= 0 || base.IDE != IDEJupyter || sts.Status.ReadyReplicas < 1 {
		// Only Jupyter reports activity, and only a ready server answers.
		return nil, nil
	}
	last, err := lastActivity(ctx, c, sts, o)
	if err != nil {
		return nil, err
	}
	if quiet := now.Sub(last); quiet > idle {
		base.Reason, base.Since = Idle, last
		base.Message = fmt.Sprintf("no activity for %s since %s, longer than the limit of %s", quiet.Round(time.Second), last.UTC().Format(time.RFC3339), idle)
		return &base, nil
	}
	return nil, nil
}

// jupyterStatus is the body of GET /api/status in Jupyter Server's REST API.
type jupyterStatus struct {
	Started      string `json:"started"`
	LastActivity string `json:"last_activity"`
	Connections  int    `json:"connections"`
	Kernels      int    `json:"kernels"`
}

// maxStatusBody bounds what Cull reads of a status response.
const maxStatusBody = 1 << 20

// lastActivity asks the notebook's Jupyter server when it was last active.
func lastActivity(ctx context.Context, c client.Client, sts *appsv1.StatefulSet, o *cullOptions) (time.Time, error) {
	token, err := tokenOf(ctx, c, sts)
	if err != nil {
		return time.Time{}, err
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sts.Namespace, Name: sts.Name}, svc); err != nil {
		return time.Time{}, fmt.Errorf("get service: %w", err)
	}
	root, err := o.serviceURL(svc)
	if err != nil {
		return time.Time{}, fmt.Errorf("service address: %w", err)
	}
	baseURL := sts.Annotations[AnnotationBaseURL]
	if baseURL == "" {
		baseURL = "/"
	}
	url := strings.TrimSuffix(root, "/") + baseURL + "api/status"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return time.Time{}, fmt.Errorf("read status: %w", err)
	}
	req.Header.Set("Authorization", "token "+token)
	req.Header.Set("Accept", "application/json")
	resp, err := o.httpClient.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("read status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
	if err != nil {
		return time.Time{}, fmt.Errorf("read status from %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return time.Time{}, fmt.Errorf("read status from %s: %s", url, resp.Status)
	}
	var st jupyterStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return time.Time{}, fmt.Errorf("read status from %s: %w", url, err)
	}
	last, err := time.Parse(time.RFC3339Nano, st.LastActivity)
	if err != nil {
		return time.Time{}, fmt.Errorf("read status from %s: last_activity %q is not an RFC 3339 time", url, st.LastActivity)
	}
	return last, nil
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
