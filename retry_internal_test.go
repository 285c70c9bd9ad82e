package cube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/yamlenc"
	"github.com/cubestudio/cube/retry"
)

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	refused := &url.Error{Op: "Patch", URL: "https://127.0.0.1:6443", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"connection refused", refused, true},
		{"EOF", &url.Error{Op: "Patch", URL: "https://x", Err: io.EOF}, true},
		{"connection reset", &url.Error{Op: "Get", URL: "https://x", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, true},
		// A watch written while the API server stopped (seen in CI).
		{"broken pipe", &url.Error{Op: "Get", URL: "https://x", Err: &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}}, true},
		// A watch whose HTTP/2 connection the transport closed once the
		// API server stopped (seen in CI).
		{"http2 connection force closed", &url.Error{Op: "Get", URL: "https://x", Err: errors.New("http2: client connection force closed via ClientConn.Close")}, true},
		{"http2 connection lost", &url.Error{Op: "Get", URL: "https://x", Err: errors.New("http2: client connection lost")}, true},
		{"503", apierrors.NewServiceUnavailable("busy"), true},
		{"500 InternalError", apierrors.NewInternalError(errors.New("etcd")), true},
		{"500 ServerTimeout", apierrors.NewServerTimeout(gr, "patch", 0), true},
		// What kube-apiserver answers server-side apply of a field its
		// schema does not know (seen on the test API server).
		{"500 without a reason", &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "failed to create typed patch object (ns/half; /v1, Kind=Service): .spec.typo: field not declared in schema"}}, false},
		{"429 without Retry-After", apierrors.NewGenericServerResponse(http.StatusTooManyRequests, "PATCH", gr, "x", "", 0, false), true},
		{"429 with Retry-After: client-go retried it", apierrors.NewTooManyRequests("slow down", 1), false},
		{"504", apierrors.NewGenericServerResponse(http.StatusGatewayTimeout, "PATCH", gr, "x", "", 0, false), true},
		{"conflict", apierrors.NewConflict(gr, "x", errors.New("modified")), false},
		{"invalid", apierrors.NewBadRequest("no"), false},
		{"forbidden", apierrors.NewForbidden(gr, "x", errors.New("no")), false},
		{"not found", apierrors.NewNotFound(gr, "x"), false},
		{"canceled", fmt.Errorf("patch: %w", context.Canceled), false},
		{"deadline", context.DeadlineExceeded, false},
	} {
		assert.Equal(t, tc.want, transient(tc.err), tc.name)
	}
}

func TestRetryingIsBoundedAndHonoursContext(t *testing.T) {
	c := &Client{retry: retry.Policy{Limit: 3, Backoff: time.Millisecond}}
	calls := 0
	err := c.retrying(t.Context(), func(context.Context) error { calls++; return apierrors.NewServiceUnavailable("busy") })
	require.ErrorIs(t, err, ErrUnavailable)
	assert.True(t, apierrors.IsServiceUnavailable(err), "the last failure is wrapped")
	assert.ErrorContains(t, err, "after 4 attempts")
	assert.Equal(t, 4, calls)

	calls = 0
	err = c.retrying(t.Context(), func(context.Context) error { calls++; return apierrors.NewBadRequest("no") })
	assert.True(t, apierrors.IsBadRequest(err))
	assert.Equal(t, 1, calls, "a refusal is not retried")

	ctx, cancel := context.WithCancel(t.Context())
	slow := &Client{retry: retry.Policy{Limit: 100, Backoff: time.Hour}}
	time.AfterFunc(20*time.Millisecond, cancel)
	began := time.Now()
	err = slow.retrying(ctx, func(context.Context) error { return apierrors.NewServiceUnavailable("busy") })
	assert.ErrorIs(t, err, context.Canceled)
	assert.True(t, apierrors.IsServiceUnavailable(err))
	assert.Less(t, time.Since(began), 10*time.Second)
}

func TestRefused(t *testing.T) {
	gr := schema.GroupResource{Resource: "services"}
	assert.True(t, refused(apierrors.NewBadRequest("no")))
	assert.True(t, refused(apierrors.NewTooManyRequests("later", 0)), "a throttled request was not served")
	assert.True(t, refused(&apierrors.StatusError{ErrStatus: metav1.Status{Code: http.StatusInternalServerError, Message: "failed to create typed patch object"}}))
	assert.False(t, refused(apierrors.NewInternalError(errors.New("etcd"))), "storage may have failed after the write")
	assert.False(t, refused(apierrors.NewServerTimeout(gr, "patch", 0)))
	assert.False(t, refused(apierrors.NewServiceUnavailable("busy")))
	assert.False(t, refused(io.EOF), "a dropped connection says nothing")
}

func TestRetryRefusesNegatives(t *testing.T) {
	c := NewFromClient(nil, Retry(retry.Policy{Limit: -1, Backoff: -time.Second, Factor: -2, MaxBackoff: -time.Second, MaxDuration: -time.Second}))
	err := c.usable()
	require.Error(t, err)
	for _, want := range []string{"cube: Retry: retry.limit: invalid value -1", "retry.backoff: invalid value -1s", "retry.factor: invalid value -2", "retry.maxBackoff: invalid value -1s", "retry.maxDuration: invalid value -1s"} {
		assert.ErrorContains(t, err, want)
	}
}

// TestRetryingStopsAtMaxDuration: a policy's MaxDuration ends the retries
// before Limit does, with the error a spent policy gives.
func TestRetryingStopsAtMaxDuration(t *testing.T) {
	c := &Client{retry: retry.Policy{Limit: 1000, Backoff: 20 * time.Millisecond, MaxDuration: 100 * time.Millisecond}}
	calls := 0
	began := time.Now()
	err := c.retrying(t.Context(), func(context.Context) error { calls++; return apierrors.NewServiceUnavailable("busy") })
	require.ErrorIs(t, err, ErrUnavailable)
	assert.Less(t, time.Since(began), time.Second)
	assert.Greater(t, calls, 1)
	assert.Less(t, calls, 10)
}

// TestDefaultRetry: the documented default of the Retry option.
func TestDefaultRetry(t *testing.T) {
	c := NewFromClient(nil)
	assert.Equal(t, retry.Policy{Limit: 6, Backoff: 250 * time.Millisecond, Factor: 2, MaxBackoff: 4 * time.Second}, c.retry)
	var total time.Duration
	for n := 1; n <= c.retry.Limit; n++ {
		total += c.retry.Delay(n)
	}
	assert.Equal(t, 11750*time.Millisecond, total, "about twelve seconds")
}

// TestFromJSONMatchesDocument holds the writer's path from a typed
// object's JSON to its path from the unstructured content, on objects with
// quantities, int-or-strings, empty timestamps, status and edge-case
// strings.
func TestFromJSONMatchesDocument(t *testing.T) {
	replicas := int32(3)
	objs := []client.Object{
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Labels: map[string]string{"app": "web", "cube.dev/release": "web"}, Annotations: map[string]string{"note": "a: b", "n": "1e3"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx:1.27", Args: []string{"--port", "8080", "yes", "", "-", "a #b", "it's"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1.5Gi")}},
					Env:       []corev1.EnvVar{{Name: "RATIO", Value: "0.5"}, {Name: "EMPTY"}},
				}}}},
			},
			Status: appsv1.DeploymentStatus{Replicas: 2},
		},
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}, Selector: map[string]string{}},
		},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Data: map[string]string{"on": "off", "multi": "a\nb", "uni": "caf\u00e9", "q": `say "hi"`, "a1": "x", "a2": "y"}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"k": "v"}},
	}
	wrote := 0
	for _, obj := range objs {
		u, err := ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		var want yamlenc.Writer
		if !want.Document(u.Object) {
			b, _ := yaml.Marshal(u.Object)
			want.Append(b)
		}
		w := yamlenc.Get()
		if w.FromJSON(obj) {
			wrote++
			if string(w.Bytes()) != string(want.Bytes()) {
				t.Errorf("%s %s:\nfrom the unstructured content:\n%s\nfrom JSON:\n%s", u.GetKind(), u.GetName(), want.Bytes(), w.Bytes())
			}
		} else if len(w.Bytes()) != 0 {
			t.Errorf("%s: declined, but left %q", u.GetName(), w.Bytes())
		}
		w.Release()
	}
	if wrote < 3 {
		t.Errorf("FromJSON wrote %d of %d objects", wrote, len(objs))
	}
}
