package envtest_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/cubetest/envtest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// A test of one's own automation against the real API server: apply a
// served model with cube, read back what the server stored. The example is
// compiled but not run (it has no Output line): it needs the API server,
// which only a test binary whose TestMain calls envtest.Main starts.
func Example() {
	var t *testing.T // the test's t
	env := envtest.Get(t)
	ns := env.Namespace(t)

	svc := serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
	if _, err := env.Client.Apply(t.Context(), svc); err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := env.Kube.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "qwen-chat"}, &d); err != nil {
		t.Fatal(err)
	}

	// A field the schema does not know is refused, not dropped.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: ns}, Data: map[string]string{"k": "v"}}
	if err := env.CreateStrict(t.Context(), cm); err != nil {
		t.Fatal(err)
	}
}
