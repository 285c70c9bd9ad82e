package notebooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/websocket"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
)

// jupyter talks to a Jupyter Server's REST API and kernel channels.
type jupyter struct {
	root, token string // root: http://host:port/base/
}

// jupyterHTTP bounds each request and opens a connection for each, so
// that one stalled connection cannot hold a poll until its deadline.
var jupyterHTTP = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}

func (j jupyter) do(ctx context.Context, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, j.root+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "token "+j.token)
	resp, err := jupyterHTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}

type kernel struct {
	ID             string `json:"id"`
	ExecutionState string `json:"execution_state"`
}

// connect opens the kernel's channels websocket. Jupyter Server answers
// the upgrade once the kernel has replied to kernel_info (or its
// kernel_info_timeout passed), so the kernel has published a status by then.
func (j jupyter) connect(t *testing.T, id string) *websocket.Conn {
	u, err := url.Parse(j.root + "api/kernels/" + id + "/channels")
	require.NoError(t, err)
	u.Scheme = "ws"
	cfg, err := websocket.NewConfig(u.String(), "http://"+u.Host)
	require.NoError(t, err)
	cfg.Header = http.Header{"Authorization": {"token " + j.token}}
	ws, err := websocket.DialConfig(cfg)
	require.NoError(t, err)
	return ws
}

// send sends a request of type msgType on the kernel's shell channel
// (Jupyter's messaging protocol, v5.3) and returns its msg_id at once: the
// kernel's replies and status messages carry it as their parent's.
func send(t *testing.T, ws *websocket.Conn, msgType string, content map[string]any) string {
	id := fmt.Sprintf("cube-%d", time.Now().UnixNano())
	msg := map[string]any{
		"header": map[string]any{
			"msg_id": id, "msg_type": msgType, "username": "cube",
			"session": "cube-journey", "version": "5.3", "date": time.Now().UTC().Format(time.RFC3339),
		},
		"parent_header": map[string]any{}, "metadata": map[string]any{}, "channel": "shell",
		"content": content,
	}
	require.NoError(t, websocket.JSON.Send(ws, msg))
	return id
}

// execute sends code to the kernel and returns the request's msg_id at
// once.
func execute(t *testing.T, ws *websocket.Conn, code string) string {
	return send(t, ws, "execute_request", map[string]any{"code": code, "silent": false, "store_history": false,
		"user_expressions": map[string]any{}, "allow_stdin": false, "stop_on_error": true})
}

func (j jupyter) kernelState(ctx context.Context, id string) (string, error) {
	var k kernel
	err := j.do(ctx, http.MethodGet, "api/kernels/"+id, &k)
	return k.ExecutionState, err
}

// A Jupyter notebook on the Debian Jupyter Server becomes Ready and serves
// its API under its base URL with the token from its Secret; Cull leaves it
// running while a kernel is busy, however long ago the last activity was,
// and stops it (StatefulSet scaled to zero, home claim kept) once the
// kernel is idle past the limit.
func TestJupyterServesAndIsCulled(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	ctx := t.Context()
	const token = "journey-token-0123456789"
	_, err := c.Clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "lab-token"},
		StringData: map[string]string{"token": token},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The culler runs on this host, outside any namespace: the
	// NetworkPolicy (not enforced by this CNI) admits the namespace itself.
	nb := notebook.Jupyter("lab", "alice").Namespace(ns).
		Image(c.Images.Python).
		AllowNamespace(map[string]string{"kubernetes.io/metadata.name": ns}).
		Launch(notebook.LaunchJupyterServer).
		Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).
		Storage("1Gi", "").
		// A request without a CPU limit: under a loaded CI machine a
		// 250m quota throttled the kernel's start past the test's wait.
		Request(corev1.ResourceCPU, "250m").Memory("2Gi")
	rel := journeys.Apply(t, cl, nb)
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(journeys.WaitFor), cube.FailOnStuckPods, journeys.Progress(t))
	require.NoError(t, err, journeys.LogsOf(t, rel))
	assert.Equal(t, cube.Ready, st.Phase)

	// The notebook's UI Service, reached at its cluster IP from this host.
	serviceURL := func(svc *corev1.Service) (string, error) {
		for _, p := range svc.Spec.Ports {
			if p.Name == notebook.PortName {
				return "http://" + svc.Spec.ClusterIP + ":" + strconv.Itoa(int(p.Port)), nil
			}
		}
		return "", fmt.Errorf("no port %q on %s", notebook.PortName, svc.Name)
	}
	svc, err := c.Clientset.CoreV1().Services(ns).Get(ctx, "lab", metav1.GetOptions{})
	require.NoError(t, err)
	root, err := serviceURL(svc)
	require.NoError(t, err)
	sts, err := nb.Build()
	require.NoError(t, err)
	base := "/"
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		if e.Name == "NB_PREFIX" {
			base = strings.TrimSuffix(e.Value, "/") + "/"
		}
	}
	j := jupyter{root: root + base, token: token}

	var status struct {
		LastActivity string `json:"last_activity"`
	}
	// Ready pods reach kube-proxy's rules for the Service a moment later.
	var lastErr error
	err = wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		lastErr = j.do(ctx, http.MethodGet, "api/status", &status)
		return lastErr == nil, nil
	})
	require.NoError(t, err, "Jupyter serves its API under %s with the Secret's token: %v\n%s", j.root, lastErr, journeys.LogsOf(t, rel))
	assert.NotEmpty(t, status.LastActivity)
	assert.Error(t, jupyter{root: j.root, token: "wrong"}.do(ctx, http.MethodGet, "api/status", nil), "a wrong token is refused")

	var k kernel
	var ws *websocket.Conn
	// received is what happened on the kernel's websocket, for a failure's
	// message: its reader appends, and a full log drops the rest.
	received := make(chan string, 1024)
	note := func(what string) {
		select {
		case received <- time.Now().UTC().Format("15:04:05.000 ") + what:
		default:
		}
	}
	// awaitState polls the kernel until it reports want, and says what it
	// last saw when it does not.
	//
	// Jupyter Server 1.23 keeps a kernel's execution_state from the status
	// messages its own iopub subscription receives, and that subscription
	// can miss the kernel's first ones (the journey has seen the kernel
	// publish busy and idle to the websocket within a second while the
	// server reported "starting" for two minutes after). The state then
	// changes only with the kernel's next status message; so while it reads
	// "starting", a kernel_info_request every two seconds makes the kernel
	// publish busy and idle again, as JupyterLab's kernel_info on connect
	// does.
	awaitState := func(want string, within time.Duration) {
		t.Helper()
		var last string
		var lastErr error
		var nudged time.Time
		answered, failed, nudges := 0, 0, 0
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, within, true, func(ctx context.Context) (bool, error) {
			state, err := j.kernelState(ctx, k.ID)
			if err != nil {
				failed, lastErr = failed+1, err
				return false, nil
			}
			answered, last = answered+1, state
			if state == "starting" && ws != nil && time.Since(nudged) > 2*time.Second {
				send(t, ws, "kernel_info_request", map[string]any{})
				nudged, nudges = time.Now(), nudges+1
			}
			return state == want, nil
		})
		if nudges > 0 {
			t.Logf("kernel %s: %d kernel_info requests while it read \"starting\"", k.ID, nudges)
		}
		if err != nil {
			// Tell a kernel that never reached the state from a server
			// that stopped answering, and the Service's path from the pod's.
			t.Logf("kernel %s: %d answers, the last %q; %d requests failed, the last: %v", k.ID, answered, last, failed, lastErr)
			t.Log(probe(t, c, ns, j, "api/kernels/"+k.ID))
			var lines []string
			for len(received) > 0 {
				lines = append(lines, <-received)
			}
			t.Logf("what the kernel's websocket received:\n%s", strings.Join(lines, "\n"))
		}
		require.NoError(t, err, "kernel %s: want %q, last saw %q\n%s", k.ID, want, last, journeys.LogsOf(t, rel))
	}
	later := func() time.Time { return time.Now().Add(3 * time.Hour) }
	cullOpts := []notebook.CullOption{notebook.FindServiceURL(serviceURL), notebook.Clock(later), notebook.HTTPClient(jupyterHTTP)}
	// A busy kernel is activity: Cull would leave the notebook running
	// however long ago the last activity was. On a loaded CI node Jupyter
	// has been seen to restart a kernel in the middle of its cell; Cull's
	// verdict then concerns an idle server, not the case under test, so a
	// kernel that is no longer busy after the verdict is replaced (at most
	// twice) with the evidence logged.
	for attempt := 1; ; attempt++ {
		require.NoError(t, j.do(ctx, http.MethodPost, "api/kernels", &k))
		note("kernel " + k.ID + " created")
		ws = j.connect(t, k.ID)
		note("websocket open")
		defer ws.Close()
		// busyFor receives the msg_id of each request the kernel publishes
		// busy for on iopub (its status message's parent).
		busyFor := make(chan string, 1024)
		// Reading answers the server's pings and drains the kernel's
		// output, as a browser does.
		go func(ws *websocket.Conn) {
			for {
				var msg struct {
					Channel string `json:"channel"`
					Header  struct {
						MsgType string `json:"msg_type"`
					} `json:"header"`
					ParentHeader struct {
						MsgID string `json:"msg_id"`
					} `json:"parent_header"`
					Content struct {
						ExecutionState string `json:"execution_state"`
					} `json:"content"`
				}
				if websocket.JSON.Receive(ws, &msg) != nil {
					break
				}
				note(strings.TrimSpace(msg.Channel + " " + msg.Header.MsgType + " " + msg.Content.ExecutionState + " " + msg.ParentHeader.MsgID))
				if msg.Channel == "iopub" && msg.Header.MsgType == "status" && msg.Content.ExecutionState == "busy" {
					select {
					case busyFor <- msg.ParentHeader.MsgID:
					default:
					}
				}
			}
			note("websocket closed")
		}(ws)
		// The kernel has answered the server's kernel_info nudge: it has
		// started and takes the cell.
		awaitState("idle", 2*time.Minute)
		cell := execute(t, ws, "import time\ntime.sleep(600)")
		note("cell " + cell + " sent")
		// Nudges the kernel had not yet read when the server first read
		// idle run before the cell, each busy then idle: the server's
		// state reads busy for one of them as well as for the cell. The
		// cell's own busy status is the start of its sleep; from then the
		// kernel stays busy.
		timeout := time.After(2 * time.Minute)
		for started := false; !started; {
			select {
			case id := <-busyFor:
				started = id == cell
			case <-timeout:
				var lines []string
				for len(received) > 0 {
					lines = append(lines, <-received)
				}
				require.FailNow(t, "the kernel did not publish busy for the cell", "kernel %s, cell %s; what the kernel's websocket received:\n%s", k.ID, cell, strings.Join(lines, "\n"))
			}
		}
		awaitState("busy", 2*time.Minute)
		culled, err := notebook.Cull(ctx, c.Client, ns, time.Hour, append(cullOpts, notebook.CullDryRun)...)
		require.NoError(t, err)
		state, stateErr := j.kernelState(ctx, k.ID)
		if stateErr == nil && state == "busy" {
			assert.Empty(t, culled, "a busy kernel is activity")
			break
		}
		t.Logf("attempt %d: kernel %s is %q (%v) after the verdict %v; Jupyter's log:\n%s", attempt, k.ID, state, stateErr, culled, journeys.LogsOf(t, rel))
		require.Less(t, attempt, 3, "the kernel did not stay busy through Cull's reading three times")
		_ = j.do(ctx, http.MethodDelete, "api/kernels/"+k.ID, nil)
	}

	require.NoError(t, j.do(ctx, http.MethodPost, "api/kernels/"+k.ID+"/interrupt", nil))
	awaitState("idle", 2*time.Minute) // the interrupted kernel goes idle

	culled, err := notebook.Cull(ctx, c.Client, ns, time.Hour, cullOpts...)
	require.NoError(t, err)
	require.Len(t, culled, 1)
	assert.Equal(t, notebook.Idle, culled[0].Reason)
	assert.Equal(t, "lab", culled[0].Name)

	var got appsv1.StatefulSet
	require.NoError(t, c.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lab"}, &got))
	require.NotNil(t, got.Spec.Replicas)
	assert.Equal(t, int32(0), *got.Spec.Replicas, "Cull scaled the notebook to zero")
	require.NoError(t, wait.PollUntilContextTimeout(ctx, time.Second, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := c.Clientset.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: cube.LabelRelease + "=lab"})
		return err == nil && len(pods.Items) == 0, nil
	}), "the notebook's pod is gone")
	_, err = c.Clientset.CoreV1().PersistentVolumeClaims(ns).Get(ctx, notebook.HomeClaimName("lab"), metav1.GetOptions{})
	assert.NoError(t, err, "the home claim stays")
}

// probe reads path once through the Service and once from the pod's own
// address, and describes the pod's conditions: what a failure needs to
// tell the server from the path to it.
func probe(t *testing.T, c *testenv.Cluster, ns string, j jupyter, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "through the Service: %v\n", j.do(ctx, http.MethodGet, path, nil))
	p, err := c.Clientset.CoreV1().Pods(ns).Get(ctx, "lab-0", metav1.GetOptions{})
	if err != nil {
		fmt.Fprintf(&b, "pod lab-0: %v\n", err)
		return b.String()
	}
	for _, cond := range p.Status.Conditions {
		fmt.Fprintf(&b, "pod lab-0 %s=%s %s %s\n", cond.Type, cond.Status, cond.Reason, cond.LastTransitionTime.UTC().Format(time.RFC3339))
	}
	for _, cs := range p.Status.ContainerStatuses {
		fmt.Fprintf(&b, "container %s ready=%t restarts=%d\n", cs.Name, cs.Ready, cs.RestartCount)
	}
	root, err := url.Parse(j.root)
	if err != nil {
		return b.String()
	}
	direct := jupyter{root: "http://" + p.Status.PodIP + ":" + root.Port() + root.Path, token: j.token}
	fmt.Fprintf(&b, "from the pod's address %s: %v\n", p.Status.PodIP, direct.do(ctx, http.MethodGet, path, nil))
	return b.String()
}
