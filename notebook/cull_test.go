package notebook_test

// Cull against the real kube-apiserver of internal/testenv (StatefulSets,
// Services and Secrets as the API server stores them, status written as the
// StatefulSet controller would with cubetest) and an httptest server that
// speaks Jupyter Server's published REST API for GET /api/status.

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/internal/testenv"
	"github.com/cubestudio/cube/notebook"
)

// fakeJupyter follows Jupyter Server's REST API for GET <base_url>api/status
// (jupyter_server/services/api/handlers.py, APIStatusHandler): token
// authentication through "Authorization: token <token>" (403 Forbidden
// without it), and a JSON body {"connections", "kernels", "last_activity",
// "started"} whose times are ISO 8601 in UTC with a "Z", as
// jupyter_server._tz.isoformat writes them. Each notebook is one base URL.
type fakeJupyter struct {
	mu       sync.Mutex
	servers  map[string]*fakeServer // by base URL
	requests []string
}

type fakeServer struct {
	token        string
	lastActivity time.Time
	failWith     int // an HTTP status to answer instead
}

func (f *fakeJupyter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.Path)
	base, ok := strings.CutSuffix(r.URL.Path, "api/status")
	srv := f.servers[base]
	if !ok || srv == nil || r.Method != http.MethodGet {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("Authorization") != "token "+srv.token {
		http.Error(w, `{"message": "Forbidden", "reason": null}`, http.StatusForbidden)
		return
	}
	if srv.failWith != 0 {
		http.Error(w, `{"message": "Internal Server Error"}`, srv.failWith)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"connections":   1,
		"kernels":       1,
		"last_activity": isoformat(srv.lastActivity),
		"started":       isoformat(srv.lastActivity.Add(-24 * time.Hour)),
	})
}

// isoformat writes a time as Python's datetime.isoformat does for an aware
// UTC time, with jupyter_server's "+00:00" → "Z".
func isoformat(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

func (f *fakeJupyter) paths() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// cullFixture applies notebooks to a fresh namespace and serves their
// Jupyter status.
type cullFixture struct {
	env     *testenv.Env
	ns      string
	jupyter *fakeJupyter
	server  *httptest.Server
	now     time.Time
}

func newCullFixture(t *testing.T) *cullFixture {
	env := testenv.Get(t)
	f := &cullFixture{env: env, ns: env.Namespace(t), jupyter: &fakeJupyter{servers: map[string]*fakeServer{}}}
	f.server = httptest.NewServer(f.jupyter)
	t.Cleanup(f.server.Close)
	// The clock runs two hours ahead of the API server's creation times.
	f.now = time.Now().Add(2 * time.Hour)
	return f
}

// add applies nb, creates its credential Secret unless noSecret, marks its
// StatefulSet ready unless notReady, and, for Jupyter, serves its status.
func (f *cullFixture) add(t *testing.T, nb *notebook.Notebook, srv *fakeServer, noSecret, notReady bool) {
	t.Helper()
	nb.Namespace(f.ns).AuthSecret(nb.Name()+"-credential", "token").AllowNamespace(istio)
	rel, err := cube.NewFromClient(f.env.Client, cube.WithNamespace(f.ns)).Apply(t.Context(), nb)
	require.NoError(t, err)
	token := "tok-" + nb.Name() + "-d41d8cd98f00b204"
	if !noSecret {
		require.NoError(t, f.env.CreateStrict(t.Context(), &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: nb.Name() + "-credential", Namespace: f.ns},
			Data:       map[string][]byte{"token": []byte(token)},
		}))
	}
	phase := cube.Ready
	if notReady {
		phase = cube.InProgress
	}
	ref := cube.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, Namespace: f.ns, Name: nb.Name()}
	require.Contains(t, rel.Objects, ref)
	require.NoError(t, cubetest.MarkObject(t.Context(), f.env.Client, ref, phase, "", ""))
	if srv != nil {
		srv.token = token
		f.jupyter.mu.Lock()
		f.jupyter.servers["/notebook/"+f.ns+"/"+nb.Name()+"/"] = srv
		f.jupyter.mu.Unlock()
	}
}

func (f *cullFixture) options() []notebook.CullOption {
	return []notebook.CullOption{
		notebook.WithServiceURL(func(svc *corev1.Service) (string, error) {
			// Every notebook's Service leads to the one test server.
			if _, err := notebook.ServiceURL(svc); err != nil {
				return "", err
			}
			return f.server.URL, nil
		}),
		notebook.WithClock(func() time.Time { return f.now }),
	}
}

func (f *cullFixture) replicas(t *testing.T, name string) int32 {
	t.Helper()
	return ptr.Deref(getSTS(t, f.env.Client, f.ns, name).Spec.Replicas, 1)
}

func TestCull(t *testing.T) {
	f := newCullFixture(t)
	f.add(t, notebook.Jupyter("active", "alice"), &fakeServer{lastActivity: f.now.Add(-5 * time.Minute)}, false, false)
	f.add(t, notebook.Jupyter("idle", "bob"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, false, false)
	f.add(t, notebook.Jupyter("broken", "carol"), &fakeServer{failWith: http.StatusInternalServerError}, false, false)
	f.add(t, notebook.Jupyter("nosecret", "dave"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, true, false)
	f.add(t, notebook.Jupyter("starting", "erin"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, false, true)
	f.add(t, notebook.Jupyter("stopped", "frank"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, false, false)
	require.NoError(t, notebook.Stop(t.Context(), f.env.Client, f.ns, "stopped"))
	f.add(t, notebook.Jupyter("old", "grace").MaxLifetime(time.Hour), &fakeServer{lastActivity: f.now.Add(-time.Minute)}, false, false)
	f.add(t, notebook.VSCode("expired", "heidi").MaxLifetime(time.Hour), nil, false, false)
	f.add(t, notebook.RStudio("renewed", "ivan").MaxLifetime(time.Hour), nil, false, false)
	require.NoError(t, notebook.Renew(t.Context(), f.env.Client, f.ns, "renewed", f.now.Add(-10*time.Minute)))
	f.add(t, notebook.VSCode("forever", "judy"), nil, false, false)

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, f.options()...)

	// The notebooks whose status cannot be read are reported, not stopped.
	require.Error(t, err)
	assert.ErrorContains(t, err, "cull notebook "+f.ns+"/broken: read status from "+f.server.URL+"/notebook/"+f.ns+"/broken/api/status: 500 Internal Server Error")
	assert.ErrorContains(t, err, "cull notebook "+f.ns+"/nosecret: get token secret:")
	assert.NotContains(t, err.Error(), "tok-", "tokens never appear in errors")

	slices.SortFunc(culled, func(a, b notebook.Culled) int { return strings.Compare(a.Name, b.Name) })
	require.Len(t, culled, 3, "%v", culled)
	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "expired", IDE: notebook.IDEVSCode, Reason: notebook.Expired,
		Since: culled[0].Since, Message: culled[0].Message}, culled[0])
	assert.WithinDuration(t, f.now.Add(-2*time.Hour), culled[0].Since, time.Minute, "counted from creation")
	assert.Contains(t, culled[0].Message, "longer than its lifetime of 1h0m0s")

	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "idle", IDE: notebook.IDEJupyter, Reason: notebook.Idle,
		Since: f.now.Add(-3 * time.Hour).Truncate(time.Microsecond).UTC(), Message: "no activity for 3h0m0s since " +
			f.now.Add(-3*time.Hour).UTC().Format(time.RFC3339) + ", longer than the limit of 1h0m0s"}, culled[1])

	assert.Equal(t, "old", culled[2].Name)
	assert.Equal(t, notebook.Expired, culled[2].Reason, "expiry is judged before activity")

	for name, want := range map[string]int32{
		"active": 1, "idle": 0, "broken": 1, "nosecret": 1, "starting": 1, "stopped": 0,
		"old": 0, "expired": 0, "renewed": 1, "forever": 1,
	} {
		assert.Equal(t, want, f.replicas(t, name), name)
	}
	for name, reason := range map[string]string{"idle": "Idle", "old": "Expired", "expired": "Expired"} {
		assert.Equal(t, reason, getSTS(t, f.env.Client, f.ns, name).Annotations[notebook.AnnotationStopReason], name)
	}
	assert.NotContains(t, getSTS(t, f.env.Client, f.ns, "stopped").Annotations, notebook.AnnotationStopReason)

	// Only running, ready Jupyter notebooks within their lifetime were asked.
	base := "/notebook/" + f.ns + "/"
	assert.ElementsMatch(t, []string{base + "active/api/status", base + "idle/api/status", base + "broken/api/status"}, f.jupyter.paths())

	// A second pass finds nothing new to stop and the same two errors.
	again, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, f.options()...)
	assert.Empty(t, again)
	assert.ErrorContains(t, err, "/broken:")
	assert.ErrorContains(t, err, "/nosecret:")

	// Start brings a culled notebook back and clears the reason.
	require.NoError(t, notebook.Start(t.Context(), f.env.Client, f.ns, "idle"))
	assert.Equal(t, int32(1), f.replicas(t, "idle"))
	assert.NotContains(t, getSTS(t, f.env.Client, f.ns, "idle").Annotations, notebook.AnnotationStopReason)
}

func TestCullDryRunAndIdleOff(t *testing.T) {
	f := newCullFixture(t)
	f.add(t, notebook.Jupyter("idle", "bob"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, false, false)
	f.add(t, notebook.VSCode("expired", "heidi").MaxLifetime(time.Hour), nil, false, false)

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, append(f.options(), notebook.CullDryRun)...)
	require.NoError(t, err)
	require.Len(t, culled, 2)
	assert.Equal(t, int32(1), f.replicas(t, "idle"), "a dry run stops nothing")
	assert.Equal(t, int32(1), f.replicas(t, "expired"))

	// Idle culling off: only expiry counts, and no server is asked.
	requests := len(f.jupyter.paths())
	culled, err = notebook.Cull(t.Context(), f.env.Client, f.ns, 0, f.options()...)
	require.NoError(t, err)
	require.Len(t, culled, 1)
	assert.Equal(t, "expired", culled[0].Name)
	assert.Equal(t, requests, len(f.jupyter.paths()))
	assert.Equal(t, int32(1), f.replicas(t, "idle"))
}

func TestCullStatusErrors(t *testing.T) {
	f := newCullFixture(t)
	f.add(t, notebook.Jupyter("wrongtoken", "a"), &fakeServer{lastActivity: f.now}, false, false)
	f.add(t, notebook.Jupyter("badjson", "b"), &fakeServer{lastActivity: f.now}, false, false)
	f.add(t, notebook.Jupyter("badtime", "c"), &fakeServer{lastActivity: f.now}, false, false)
	f.add(t, notebook.Jupyter("unrouted", "d"), nil, false, false)
	f.add(t, notebook.Jupyter("badlifetime", "e"), nil, false, false)
	f.add(t, notebook.Jupyter("badrenewal", "f").MaxLifetime(time.Hour), nil, false, false)
	f.jupyter.mu.Lock()
	f.jupyter.servers["/notebook/"+f.ns+"/wrongtoken/"].token = "another"
	f.jupyter.mu.Unlock()
	// Servers that answer, but not as Jupyter does.
	mux := http.NewServeMux()
	mux.HandleFunc("/notebook/"+f.ns+"/badjson/api/status", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("<html>")) })
	mux.HandleFunc("/notebook/"+f.ns+"/badtime/api/status", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"last_activity": "yesterday"}`))
	})
	mux.Handle("/", f.jupyter)
	odd := httptest.NewServer(mux)
	t.Cleanup(odd.Close)
	for name, patch := range map[string]string{
		"badlifetime": `{"metadata":{"annotations":{"notebook.cube.dev/max-lifetime":"forever"}}}`,
		"badrenewal":  `{"metadata":{"annotations":{"notebook.cube.dev/renewed-at":"last week"}}}`,
	} {
		sts := getSTS(t, f.env.Client, f.ns, name)
		require.NoError(t, f.env.Client.Patch(t.Context(), sts, rawMergePatch(patch)))
	}

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour,
		notebook.WithServiceURL(func(*corev1.Service) (string, error) { return odd.URL, nil }),
		notebook.WithClock(func() time.Time { return f.now }),
		notebook.WithHTTPClient(&http.Client{Timeout: 5 * time.Second}))
	assert.Empty(t, culled)
	require.Error(t, err)
	msg := err.Error()
	assert.Contains(t, msg, "/wrongtoken: read status from "+odd.URL+"/notebook/"+f.ns+"/wrongtoken/api/status: 403 Forbidden")
	assert.Contains(t, msg, "/badjson: read status from")
	assert.Contains(t, msg, `/badtime: read status from `+odd.URL+`/notebook/`+f.ns+`/badtime/api/status: last_activity "yesterday" is not an RFC 3339 time`)
	assert.Contains(t, msg, "/unrouted: read status from "+odd.URL+"/notebook/"+f.ns+"/unrouted/api/status: 404 Not Found")
	assert.Contains(t, msg, `/badlifetime: annotation notebook.cube.dev/max-lifetime="forever" is not a positive duration`)
	assert.Contains(t, msg, `/badrenewal: annotation notebook.cube.dev/renewed-at="last week" is not an RFC 3339 time`)
	assert.NotContains(t, msg, "tok-")
	for _, name := range []string{"wrongtoken", "badjson", "badtime", "unrouted", "badlifetime", "badrenewal"} {
		assert.Equal(t, int32(1), f.replicas(t, name), name)
	}

	// The default address needs cluster DNS, which the test machine lacks:
	// the failure is reported per notebook.
	_, err = notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour,
		notebook.WithClock(func() time.Time { return f.now }),
		notebook.WithHTTPClient(&http.Client{Timeout: 2 * time.Second}))
	assert.ErrorContains(t, err, "/wrongtoken: read status: Get \"http://wrongtoken."+f.ns+".svc:8888/notebook/"+f.ns+"/wrongtoken/api/status\"")
}

func TestServiceURL(t *testing.T) {
	u, err := notebook.ServiceURL(&corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "team-a"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "metrics", Port: 9100}, {Name: "http", Port: 8888}}},
	})
	require.NoError(t, err)
	assert.Equal(t, "http://lab.team-a.svc:8888", u)

	_, err = notebook.ServiceURL(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "team-a"}})
	assert.EqualError(t, err, `service team-a/lab has no port named "http"`)
}

func rawMergePatch(patch string) client.Patch {
	return client.RawPatch(types.MergePatchType, []byte(patch))
}
