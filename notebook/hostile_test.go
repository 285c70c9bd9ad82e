package notebook_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
)

var (
	noon      = time.Date(2026, 7, 1, 12, 0, 0, 0, time.UTC)
	year9999  = time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)
	atNoon    = notebook.Clock(func() time.Time { return noon })
	codeAlive = `{"status":"expired","lastHeartbeat":%d}`
)

// codeNotebook is a ready VS Code notebook in a fake API server, created at
// created (the fake client keeps what it is given), with annotations.
func codeNotebook(t *testing.T, name string, created time.Time, annotations map[string]string) client.Client {
	t.Helper()
	nb := notebook.VSCode(name, "bob").Namespace("team-a").Credential(pod.SecretKeyRef{Name: name + "-password", Key: "password"}).AllowNamespace(ingress)
	if annotations[notebook.AnnotationMaxLifetime] != "" {
		nb.MaxLifetime(time.Hour)
	}
	objs, err := nb.Objects()
	require.NoError(t, err)
	sts := objs[3].(*appsv1.StatefulSet)
	sts.Status.ReadyReplicas = 1
	sts.CreationTimestamp = metav1.Time{Time: created}
	if sts.Annotations == nil {
		sts.Annotations = map[string]string{}
	}
	for k, v := range annotations {
		sts.Annotations[k] = v
	}
	return fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build()
}

func replicasOf(t *testing.T, c client.Client, name string) int32 {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: name}, sts))
	return ptr.Deref(sts.Spec.Replicas, 1)
}

func heartbeat(t *testing.T, at int64) notebook.CullOption {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, codeAlive, at) }))
	t.Cleanup(srv.Close)
	return notebook.FindServiceURL(func(*corev1.Service) (string, error) { return srv.URL, nil })
}

// Cull with nil options and a nil HTTP client, service URL or clock
// reports them instead of panicking.
func TestCullRefusesNilOptions(t *testing.T) {
	c := codeNotebook(t, "lab", noon.Add(-time.Minute), nil)
	culled, err := notebook.Cull(t.Context(), c, "team-a", time.Hour, nil, atNoon, heartbeat(t, noon.UnixMilli()))
	require.NoError(t, err, "a nil option is ignored")
	assert.Empty(t, culled)

	_, err = notebook.Cull(t.Context(), c, "team-a", time.Hour, notebook.HTTPClient(nil), notebook.FindServiceURL(nil), notebook.Clock(nil))
	require.Error(t, err)
	for _, want := range []string{"HTTPClient: client must not be nil", "FindServiceURL: function must not be nil", "Clock: clock must not be nil"} {
		assert.Contains(t, err.Error(), want)
	}
	assert.Equal(t, int32(1), replicasOf(t, c, "lab"))
}

// Times that are the zero value or a placeholder neither cull a notebook
// at once nor keep it for ever: Cull reports them and leaves it running.
func TestCullRefusesTimesItCannotJudge(t *testing.T) {
	lifetime := map[string]string{notebook.AnnotationMaxLifetime: "1h0m0s"}
	for name, tc := range map[string]struct {
		c    client.Client
		opts []notebook.CullOption
		want string
	}{
		"never created": {codeNotebook(t, "lab", time.Time{}, lifetime), nil,
			"lifetime not judged: creation time: must be set"},
		"renewed in 9999": {codeNotebook(t, "lab", noon.Add(-3*time.Hour), map[string]string{
			notebook.AnnotationMaxLifetime: "1h0m0s", notebook.AnnotationRenewedAt: year9999.Format(time.RFC3339)}), nil,
			"lifetime not judged: annotation notebook.cube.dev/renewed-at: 9999-01-01T00:00:00Z is outside"},
		"renewed in year 1": {codeNotebook(t, "lab", noon.Add(-3*time.Hour), map[string]string{
			notebook.AnnotationMaxLifetime: "1h0m0s", notebook.AnnotationRenewedAt: "0001-01-01T00:00:00Z"}), nil,
			"lifetime not judged: annotation notebook.cube.dev/renewed-at: must be set"},
		"heart beat in 9999": {codeNotebook(t, "lab", noon.Add(-3*time.Hour), nil), []notebook.CullOption{heartbeat(t, year9999.UnixMilli())},
			"idleness not judged: last activity: 9999-01-01T00:00:00Z is outside"},
	} {
		opts := append([]notebook.CullOption{atNoon, heartbeat(t, noon.Add(-3*time.Hour).UnixMilli())}, tc.opts...)
		culled, err := notebook.Cull(t.Context(), tc.c, "team-a", time.Hour, opts...)
		assert.ErrorContains(t, err, "cull notebook team-a/lab: "+tc.want, name)
		assert.Empty(t, culled, name)
		assert.Equal(t, int32(1), replicasOf(t, tc.c, "lab"), name)
	}

	c := codeNotebook(t, "lab", noon.Add(-3*time.Hour), nil)
	for _, clock := range []time.Time{{}, year9999} {
		_, err := notebook.Cull(t.Context(), c, "team-a", time.Hour, notebook.Clock(func() time.Time { return clock }), heartbeat(t, 1))
		assert.ErrorContains(t, err, "cull notebooks: Clock: now:")
	}
	assert.Equal(t, int32(1), replicasOf(t, c, "lab"))
}

func TestRenewRefusesTimesItCannotJudge(t *testing.T) {
	c := codeNotebook(t, "lab", noon, nil)
	assert.EqualError(t, notebook.Renew(t.Context(), c, "team-a", "lab", time.Time{}), "renew notebook team-a/lab: at: must be set (it is the zero time)")
	assert.ErrorContains(t, notebook.Renew(t.Context(), c, "team-a", "lab", year9999), "renew notebook team-a/lab: at: 9999-01-01T00:00:00Z is outside")
	sts := &appsv1.StatefulSet{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: "team-a", Name: "lab"}, sts))
	assert.NotContains(t, sts.Annotations, notebook.AnnotationRenewedAt)
	require.NoError(t, notebook.Renew(t.Context(), c, "team-a", "lab", noon))
}

func TestMaxLifetimeWithoutItsUnitRefused(t *testing.T) {
	_, err := notebook.Jupyter("lab", "alice").Namespace("team-a").Credential(pod.SecretKeyRef{Name: "s", Key: "token"}).AllowNamespace(ingress).MaxLifetime(8).Objects()
	assert.EqualError(t, err, `maxLifetime: Invalid value: "8ns": must be zero (no expiry) or at least a minute; a count without its unit is nanoseconds`)
	_, err = notebook.Jupyter("lab", "alice").Namespace("team-a").Credential(pod.SecretKeyRef{Name: "s", Key: "token"}).AllowNamespace(ingress).MaxLifetime(time.Minute).Objects()
	assert.NoError(t, err)
}

// FuzzCullTimes culls one VS Code notebook with arbitrary creation,
// renewal, lifetime, heartbeat and clock: it is stopped only for a reason
// whose times lie between 1970 and 2262, and otherwise left running.
func FuzzCullTimes(f *testing.F) {
	f.Add(int64(1782900000), "2026-07-01T11:00:00Z", "1h0m0s", int64(1782896400000), int64(1782907200))
	f.Add(int64(0), "0001-01-01T00:00:00Z", "1h", int64(0), int64(1782907200))
	f.Add(int64(-62135596800), "9999-12-31T23:59:59Z", "1ns", int64(1<<62), int64(253402300799))
	f.Fuzz(func(t *testing.T, createdUnix int64, renewedAt, lifetime string, heartbeatMilli, nowUnix int64) {
		annotations := map[string]string{notebook.AnnotationMaxLifetime: lifetime, notebook.AnnotationRenewedAt: renewedAt}
		c := codeNotebook(t, "lab", time.Unix(createdUnix, 0), annotations)
		now := time.Unix(nowUnix, 0)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, codeAlive, heartbeatMilli) }))
		defer srv.Close()
		culled, err := notebook.Cull(t.Context(), c, "team-a", time.Hour, notebook.Clock(func() time.Time { return now }),
			notebook.FindServiceURL(func(*corev1.Service) (string, error) { return srv.URL, nil }))
		for _, cu := range culled {
			for _, at := range []time.Time{cu.Since, now} {
				if at.Year() < 1970 || at.Year() > 2262 {
					t.Fatalf("culled %v at %v (error %v)", cu, now, err)
				}
			}
		}
		if len(culled) == 0 && replicasOf(t, c, "lab") != 1 {
			t.Fatalf("stopped without a reason given")
		}
	})
}
