package label_test

// Label Studio's image cannot be pulled here (no registry), so the test
// cluster's Python image stands in for it: a script that refuses to serve
// unless what Label Studio reads is there (LABEL_STUDIO_USERNAME,
// LABEL_STUDIO_PASSWORD and LABEL_STUDIO_USER_TOKEN from the Secret, a
// writable data directory on the claim as the image's user 1001), and then
// answers /health as Label Studio does ({"status": "UP"}), so the
// Deployment becomes available only if the rendered pod is right. If the
// write to the data directory fails there, look at the volume first: a
// host-path provisioner's volumes ignore fsGroup, which is how a real
// claim becomes writable for user 1001.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/pod"
)

const standinStudio = `
import http.server, json, os
assert os.getuid() == 1001, os.getuid()
assert os.environ["LABEL_STUDIO_USERNAME"] == "admin@example.com"
assert os.environ["LABEL_STUDIO_PASSWORD"] == "s3cret-pass"
assert os.environ["LABEL_STUDIO_USER_TOKEN"] == "tok-123"
open("/label-studio/data/label_studio.sqlite3", "w").write("stand-in")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = json.dumps({"status": "UP"}).encode()
        self.send_response(200 if self.path == "/health" else 404)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)
http.server.HTTPServer(("", 8080), H).serve_forever()
`

func TestStudioRunsOnTheCluster(t *testing.T) {
	c := testenv.GetCluster(t)
	ns := c.Namespace(t)
	cl, err := cube.New(c.Config, cube.Namespace(ns))
	require.NoError(t, err)
	ctx := t.Context()
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: "ls-admin", Namespace: ns},
		StringData: map[string]string{"email": "admin@example.com", "password": "s3cret-pass", "token": "tok-123"},
	}
	require.NoError(t, c.Client.Create(ctx, secret))

	studio := label.Studio("labels").Namespace(ns).Admin(pod.SecretKeyRef{Name: "ls-admin", Key: "email"}, pod.SecretKeyRef{Name: "ls-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "ls-admin", Key: "token"}).
		Storage("1Gi", "").Image(c.Images.Python).ImagePullPolicy(corev1.PullNever).Command("python3", "-c", standinStudio)
	rel, err := cl.Apply(ctx, studio)
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(5*time.Minute), cube.FailOnStuckPods)
	require.NoError(t, err, "%+v", st)
}
