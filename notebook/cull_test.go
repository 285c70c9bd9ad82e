package notebook_test

// Cull against the real kube-apiserver of internal/testsupport/testenv (StatefulSets,
// Services, Secrets and Pods as the API server stores them, status written
// as the StatefulSet controller would with cubetest) and httptest servers
// that follow the servers' published APIs: Jupyter Server's REST API for
// GET /api/status and code-server's GET /healthz.

import (
	"encoding/json"
	"fmt"
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
	"github.com/cubestudio/cube/internal/podspec"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
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
	kernels      []fakeKernel
	kernelsFail  int // an HTTP status GET api/kernels answers instead
}

// fakeKernel is one kernel of GET <base_url>api/kernels
// (jupyter_server/services/kernels/handlers.py MainKernelHandler.get, the
// list of kernelmanager.py kernel_model: id, name, last_activity,
// execution_state, connections).
type fakeKernel struct {
	state        string
	lastActivity time.Time
}

func (f *fakeJupyter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.URL.Path)
	base, status := strings.CutSuffix(r.URL.Path, "api/status")
	if !status {
		base, _ = strings.CutSuffix(r.URL.Path, "api/kernels")
	}
	srv := f.servers[base]
	if base == r.URL.Path || srv == nil || r.Method != http.MethodGet {
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
	if !status {
		if srv.kernelsFail != 0 {
			http.Error(w, `{"message": "Internal Server Error"}`, srv.kernelsFail)
			return
		}
		list := make([]map[string]any, 0, len(srv.kernels))
		for i, k := range srv.kernels {
			list = append(list, map[string]any{
				"id": fmt.Sprintf("4cea8598-de71-43f7-bbff-0f60c646459%d", i), "name": "python3",
				"last_activity": isoformat(k.lastActivity), "execution_state": k.state, "connections": 1,
			})
		}
		_ = json.NewEncoder(w).Encode(list)
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"connections":   1,
		"kernels":       len(srv.kernels),
		"last_activity": isoformat(srv.lastActivity),
		"started":       isoformat(srv.lastActivity.Add(-24 * time.Hour)),
	})
}

// isoformat writes a time as Python's datetime.isoformat does for an aware
// UTC time, with jupyter_server's "+00:00" → "Z".
func isoformat(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00") }

// fakeCodeServer follows code-server's GET /healthz (src/node/routes/health.ts
// and src/node/heart.ts in coder/code-server): served at the root of its
// listener without authentication, as JSON {"status", "lastHeartbeat"},
// where lastHeartbeat is Date.now() in milliseconds at the heart's last beat
// (0 before the first) and status is "alive" while that beat is less than a
// minute old by the server's clock, else "expired". Every request but
// /healthz beats the heart (src/node/routes/index.ts), so a culler that sent
// any other request would itself look like activity; with password
// authentication those requests are redirected to ./login.
type fakeCodeServer struct {
	mu            sync.Mutex
	now           time.Time // the server's clock
	lastHeartbeat int64
	requests      []*http.Request
}

func (f *fakeCodeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests = append(f.requests, r.Clone(r.Context()))
	if r.URL.Path != "/healthz" && r.URL.Path != "/healthz/" {
		f.lastHeartbeat = f.now.UnixMilli()
		http.Redirect(w, r, "./login", http.StatusFound)
		return
	}
	status := "expired"
	if f.now.UnixMilli()-f.lastHeartbeat < time.Minute.Milliseconds() {
		status = "alive"
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": status, "lastHeartbeat": f.lastHeartbeat})
}

// asked returns the paths requested and whether any request carried a
// credential.
func (f *fakeCodeServer) asked() (paths []string, credentials bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.requests {
		paths = append(paths, r.URL.Path)
		credentials = credentials || r.Header.Get("Authorization") != "" || r.Header.Get("Cookie") != ""
	}
	return paths, credentials
}

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
	code    map[string]string // code-server stand-ins by notebook
	now     time.Time
}

func newCullFixture(t *testing.T) *cullFixture {
	env := testenv.Get(t)
	f := &cullFixture{env: env, ns: env.Namespace(t), jupyter: &fakeJupyter{servers: map[string]*fakeServer{}}, code: map[string]string{}}
	f.server = httptest.NewServer(f.jupyter)
	t.Cleanup(f.server.Close)
	// The clock runs two hours ahead of the API server's creation times,
	// on a whole second: the API server keeps times to the second, so
	// durations measured from them are exact.
	f.now = time.Now().Add(2 * time.Hour).Truncate(time.Second)
	return f
}

// add applies nb, creates its credential Secret unless noSecret, marks its
// StatefulSet ready unless notReady, and, for Jupyter, serves its status.
func (f *cullFixture) add(t *testing.T, nb *notebook.Notebook, srv *fakeServer, noSecret, notReady bool) {
	t.Helper()
	nb.Namespace(f.ns).Credential(pod.SecretKeyRef{Name: podspec.Of(&nb.Handle).Name() + "-credential", Key: "token"}).AllowNamespace(istio)
	rel, err := cube.NewFromClient(f.env.Client, cube.Namespace(f.ns)).Apply(t.Context(), nb)
	require.NoError(t, err)
	token := "tok-" + podspec.Of(&nb.Handle).Name() + "-d41d8cd98f00b204"
	if !noSecret {
		require.NoError(t, f.env.CreateStrict(t.Context(), &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
			ObjectMeta: metav1.ObjectMeta{Name: podspec.Of(&nb.Handle).Name() + "-credential", Namespace: f.ns},
			Data:       map[string][]byte{"token": []byte(token)},
		}))
	}
	phase := cube.Ready
	if notReady {
		phase = cube.InProgress
	}
	ref := cube.ObjectRef{GroupVersionKind: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}, Namespace: f.ns, Name: podspec.Of(&nb.Handle).Name()}
	require.Contains(t, rel.Objects, ref)
	require.NoError(t, cubetest.MarkObject(t.Context(), f.env.Client, ref, phase, "", ""))
	if srv != nil {
		srv.token = token
		f.jupyter.mu.Lock()
		f.jupyter.servers["/notebook/"+f.ns+"/"+podspec.Of(&nb.Handle).Name()+"/"] = srv
		f.jupyter.mu.Unlock()
	}
}

// serveCode puts h behind the Service of the notebook name, as its
// code-server.
func (f *cullFixture) serveCode(t *testing.T, name string, h http.Handler) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.code[name] = srv.URL
}

// addCode applies a VS Code notebook, ready, whose code-server last beat
// at lastHeartbeat (zero: never), and returns its code-server.
func (f *cullFixture) addCode(t *testing.T, name string, lastHeartbeat time.Time) *fakeCodeServer {
	t.Helper()
	f.add(t, notebook.VSCode(name, "kim"), nil, false, false)
	code := &fakeCodeServer{now: f.now}
	if !lastHeartbeat.IsZero() {
		code.lastHeartbeat = lastHeartbeat.UnixMilli()
	}
	f.serveCode(t, name, code)
	return code
}

// startPod creates the pod the StatefulSet controller would create for the
// notebook, with its container running since startedAt as the kubelet
// reports it.
func (f *cullFixture) startPod(t *testing.T, name string, startedAt time.Time) {
	t.Helper()
	sts := getSTS(t, f.env.Client, f.ns, name)
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: f.ns, Labels: sts.Spec.Template.Labels},
		Spec:       *sts.Spec.Template.Spec.DeepCopy(),
	}
	p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: notebook.HomeVolume, VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: notebook.HomeClaimName(name)},
	}})
	require.NoError(t, f.env.CreateStrict(t.Context(), p))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{
		Name:  notebook.ContainerName,
		Image: p.Spec.Containers[0].Image,
		Ready: true,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(startedAt)}},
	}}}
	require.NoError(t, f.env.Client.Status().Update(t.Context(), p))
}

func (f *cullFixture) options() []notebook.CullOption {
	return []notebook.CullOption{
		notebook.FindServiceURL(func(svc *corev1.Service) (string, error) {
			// A notebook's Service leads to its code-server stand-in or
			// to the one Jupyter test server.
			if _, err := notebook.ServiceURL(svc); err != nil {
				return "", err
			}
			if u, ok := f.code[svc.Name]; ok {
				return u, nil
			}
			return f.server.URL, nil
		}),
		notebook.Clock(func() time.Time { return f.now }),
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
	forever := f.addCode(t, "forever", f.now.Add(-5*time.Minute))
	codeIdle := f.addCode(t, "code-idle", f.now.Add(-3*time.Hour-1500*time.Millisecond))
	codeAlive := f.addCode(t, "code-alive", f.now.Add(-10*time.Second))

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, f.options()...)

	// The notebooks whose status cannot be read are reported, not stopped.
	require.Error(t, err)
	assert.ErrorContains(t, err, "cull notebook "+f.ns+"/broken: read status from "+f.server.URL+"/notebook/"+f.ns+"/broken/api/status: 500 Internal Server Error")
	assert.ErrorContains(t, err, "cull notebook "+f.ns+"/nosecret: get token secret:")
	assert.Len(t, strings.Split(err.Error(), "\n"), 2, "RStudio is never asked: %v", err)
	assert.NotContains(t, err.Error(), "tok-", "tokens never appear in errors")

	slices.SortFunc(culled, func(a, b notebook.Culled) int { return strings.Compare(a.Name, b.Name) })
	require.Len(t, culled, 4, "%v", culled)
	lastBeat := time.UnixMilli(f.now.Add(-3*time.Hour - 1500*time.Millisecond).UnixMilli()).UTC()
	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "code-idle", IDE: notebook.IDEVSCode, Reason: notebook.Idle,
		Since: lastBeat, Message: "no activity for 3h0m2s since " + lastBeat.Format(time.RFC3339) + ", longer than the limit of 1h0m0s"}, culled[0])

	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "expired", IDE: notebook.IDEVSCode, Reason: notebook.Expired,
		Since: culled[1].Since, Message: culled[1].Message}, culled[1])
	assert.WithinDuration(t, f.now.Add(-2*time.Hour), culled[1].Since, time.Minute, "counted from creation")
	assert.Contains(t, culled[1].Message, "longer than its lifetime of 1h0m0s")

	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "idle", IDE: notebook.IDEJupyter, Reason: notebook.Idle,
		Since: f.now.Add(-3 * time.Hour).Truncate(time.Microsecond).UTC(), Message: "no activity for 3h0m0s since " +
			f.now.Add(-3*time.Hour).UTC().Format(time.RFC3339) + ", longer than the limit of 1h0m0s"}, culled[2])

	assert.Equal(t, "old", culled[3].Name)
	assert.Equal(t, notebook.Expired, culled[3].Reason, "expiry is judged before activity")

	for name, want := range map[string]int32{
		"active": 1, "idle": 0, "broken": 1, "nosecret": 1, "starting": 1, "stopped": 0,
		"old": 0, "expired": 0, "renewed": 1, "forever": 1, "code-idle": 0, "code-alive": 1,
	} {
		assert.Equal(t, want, f.replicas(t, name), name)
	}
	for name, reason := range map[string]string{"idle": "Idle", "old": "Expired", "expired": "Expired", "code-idle": "Idle"} {
		assert.Equal(t, reason, getSTS(t, f.env.Client, f.ns, name).Annotations[notebook.AnnotationStopReason], name)
	}
	assert.NotContains(t, getSTS(t, f.env.Client, f.ns, "stopped").Annotations, notebook.AnnotationStopReason)

	// Only running, ready notebooks within their lifetime were asked, each
	// at its server's status endpoint; code-server without credentials.
	base := "/notebook/" + f.ns + "/"
	assert.ElementsMatch(t, []string{base + "active/api/status", base + "active/api/kernels", base + "idle/api/status", base + "idle/api/kernels", base + "broken/api/status"}, f.jupyter.paths())
	for _, code := range []*fakeCodeServer{forever, codeIdle, codeAlive} {
		paths, credentials := code.asked()
		assert.Equal(t, []string{"/healthz"}, paths)
		assert.False(t, credentials, "code-server's /healthz needs no credential, so none is sent")
	}

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

// A kernel busy in a long cell that prints nothing keeps the notebook: its
// last_activity and the server's stay at the cell's start, but its
// execution_state is busy (Kubeflow's culler reads it the same way).
func TestCullKeepsBusyKernels(t *testing.T) {
	f := newCullFixture(t)
	quiet := f.now.Add(-3 * time.Hour)
	f.add(t, notebook.Jupyter("busy", "alice"), &fakeServer{lastActivity: quiet, kernels: []fakeKernel{{"idle", quiet}, {"busy", quiet}}}, false, false)
	f.add(t, notebook.Jupyter("starting", "bob"), &fakeServer{lastActivity: quiet, kernels: []fakeKernel{{"starting", quiet}}}, false, false)
	f.add(t, notebook.Jupyter("recent", "carol"), &fakeServer{lastActivity: quiet, kernels: []fakeKernel{{"idle", f.now.Add(-10 * time.Minute)}}}, false, false)
	f.add(t, notebook.Jupyter("dead", "dave"), &fakeServer{lastActivity: quiet, kernels: []fakeKernel{{"dead", f.now}}}, false, false)
	f.add(t, notebook.Jupyter("idle", "erin"), &fakeServer{lastActivity: quiet, kernels: []fakeKernel{{"idle", quiet.Add(-time.Hour)}}}, false, false)
	f.add(t, notebook.Jupyter("kernels-down", "frank"), &fakeServer{lastActivity: quiet, kernelsFail: http.StatusBadGateway}, false, false)

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, f.options()...)
	require.Error(t, err)
	assert.EqualError(t, err, "cull notebook "+f.ns+"/kernels-down: read status from "+f.server.URL+"/notebook/"+f.ns+"/kernels-down/api/kernels: 502 Bad Gateway")
	names := make([]string, len(culled))
	for i, c := range culled {
		names[i] = c.Name
	}
	assert.ElementsMatch(t, []string{"dead", "idle"}, names, "a dead kernel is no activity; the latest idle kernel's time counts")
	for _, c := range culled {
		assert.Equal(t, quiet.Truncate(time.Microsecond).UTC(), c.Since, c.Name)
	}
	for name, want := range map[string]int32{"busy": 1, "starting": 1, "recent": 1, "dead": 0, "idle": 0, "kernels-down": 1} {
		assert.Equal(t, want, f.replicas(t, name), name)
	}
}

func TestCullDryRunAndIdleOff(t *testing.T) {
	f := newCullFixture(t)
	f.add(t, notebook.Jupyter("idle", "bob"), &fakeServer{lastActivity: f.now.Add(-3 * time.Hour)}, false, false)
	f.add(t, notebook.VSCode("expired", "heidi").MaxLifetime(time.Hour), nil, false, false)
	code := f.addCode(t, "code-idle", f.now.Add(-2*time.Hour))

	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, append(f.options(), notebook.CullDryRun)...)
	require.NoError(t, err)
	slices.SortFunc(culled, func(a, b notebook.Culled) int { return strings.Compare(a.Name, b.Name) })
	require.Len(t, culled, 3)
	assert.Equal(t, []string{"code-idle", "expired", "idle"}, []string{culled[0].Name, culled[1].Name, culled[2].Name})
	assert.Equal(t, notebook.Idle, culled[0].Reason)
	assert.Equal(t, time.UnixMilli(f.now.Add(-2*time.Hour).UnixMilli()).UTC(), culled[0].Since)
	for _, name := range []string{"idle", "expired", "code-idle"} {
		sts := getSTS(t, f.env.Client, f.ns, name)
		assert.Equal(t, int32(1), ptr.Deref(sts.Spec.Replicas, 1), "a dry run stops nothing: %s", name)
		assert.NotContains(t, sts.Annotations, notebook.AnnotationStopReason, name)
	}

	// Idle culling off: only expiry counts, and no server is asked.
	requests := len(f.jupyter.paths())
	codeRequests, _ := code.asked()
	culled, err = notebook.Cull(t.Context(), f.env.Client, f.ns, 0, f.options()...)
	require.NoError(t, err)
	require.Len(t, culled, 1)
	assert.Equal(t, "expired", culled[0].Name)
	assert.Equal(t, requests, len(f.jupyter.paths()))
	codeRequestsAfter, _ := code.asked()
	assert.Equal(t, codeRequests, codeRequestsAfter)
	assert.Equal(t, int32(1), f.replicas(t, "idle"))
	assert.Equal(t, int32(1), f.replicas(t, "code-idle"))
}

// TestCullCodeServer covers what code-server's /healthz can answer: a server
// nobody has used yet (lastHeartbeat 0), judged from its container's start,
// and the answers Cull refuses, each reported under the notebook's name with
// the notebook left running.
func TestCullCodeServer(t *testing.T) {
	f := newCullFixture(t)
	f.addCode(t, "unused", time.Time{})
	f.startPod(t, "unused", f.now.Add(-90*time.Minute))
	f.addCode(t, "just-started", time.Time{})
	f.startPod(t, "just-started", f.now.Add(-10*time.Minute))
	f.addCode(t, "nopod", time.Time{})
	f.addCode(t, "stale-clock", f.now.Add(-10*time.Second))

	answer := func(name string, status int, body string) {
		f.add(t, notebook.VSCode(name, "kim"), nil, false, false)
		f.serveCode(t, name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/healthz" {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(status)
			_, _ = w.Write([]byte(body))
		}))
	}
	answer("badjson", http.StatusOK, "<html>")
	answer("down", http.StatusBadGateway, `{"error": "Bad Gateway"}`)
	answer("nofield", http.StatusOK, `{"status": "expired"}`)
	answer("oddstatus", http.StatusOK, `{"status": "sleeping", "lastHeartbeat": 1}`)
	answer("negative", http.StatusOK, `{"status": "expired", "lastHeartbeat": -5}`)
	answer("huge", http.StatusOK, `{"status": "expired", "lastHeartbeat": 1, "pad": "`+strings.Repeat("a", 2<<20)+`"}`)

	opts := f.options()
	culled, err := notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, opts...)

	require.Len(t, culled, 1, "%v", culled)
	started := f.now.Add(-90 * time.Minute).Truncate(time.Second).UTC()
	assert.Equal(t, notebook.Culled{Namespace: f.ns, Name: "unused", IDE: notebook.IDEVSCode, Reason: notebook.Idle,
		Since: started, Message: "no activity for 1h30m0s since " + started.Format(time.RFC3339) + ", longer than the limit of 1h0m0s"}, culled[0])

	require.Error(t, err)
	msg := err.Error()
	prefix := func(name string) string { return "cull notebook " + f.ns + "/" + name + ": " }
	assert.Contains(t, msg, prefix("nopod")+"no heartbeat yet: get pod: pods \"nopod-0\" not found")
	assert.Contains(t, msg, prefix("badjson")+"read status from "+f.code["badjson"]+"/healthz: invalid character '<'")
	assert.Contains(t, msg, prefix("down")+"read status from "+f.code["down"]+"/healthz: 502 Bad Gateway")
	assert.Contains(t, msg, prefix("nofield")+"read status from "+f.code["nofield"]+"/healthz: no lastHeartbeat")
	assert.Contains(t, msg, prefix("oddstatus")+"read status from "+f.code["oddstatus"]+`/healthz: status "sleeping" is neither "alive" nor "expired"`)
	assert.Contains(t, msg, prefix("negative")+"read status from "+f.code["negative"]+"/healthz: lastHeartbeat -5 is negative")
	assert.Contains(t, msg, prefix("huge")+"read status from "+f.code["huge"]+"/healthz: unexpected end of JSON input", "the body is read up to 1 MiB")
	assert.Len(t, strings.Split(msg, "\n"), 7, msg)
	for _, name := range []string{"just-started", "nopod", "stale-clock", "badjson", "down", "nofield", "oddstatus", "negative", "huge"} {
		assert.Equal(t, int32(1), f.replicas(t, name), name)
	}
	assert.Equal(t, int32(0), f.replicas(t, "unused"))

	// code-server's own clock decides "alive", whatever the culler's says.
	_, err = notebook.Cull(t.Context(), f.env.Client, f.ns, time.Hour, append(opts,
		notebook.Clock(func() time.Time { return f.now.Add(24 * time.Hour) }))...)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "/stale-clock")
	assert.Equal(t, int32(1), f.replicas(t, "stale-clock"))
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
		notebook.FindServiceURL(func(*corev1.Service) (string, error) { return odd.URL, nil }),
		notebook.Clock(func() time.Time { return f.now }),
		notebook.HTTPClient(&http.Client{Timeout: 5 * time.Second}))
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
		notebook.Clock(func() time.Time { return f.now }),
		notebook.HTTPClient(&http.Client{Timeout: 2 * time.Second}))
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
