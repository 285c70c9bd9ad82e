package envtest_test

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/cubetest/envtest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/serve"
)

// TestApplyWaitRead is an adopter's test: apply with env.Client, play the
// controller with cubetest.MarkObject, wait, read back with env.Kube.
func TestApplyWaitRead(t *testing.T) {
	env := envtest.Get(t)
	if env != envtest.Get(t) {
		t.Fatal("Get returns one environment per test binary")
	}
	ns := env.Namespace(t)
	ctx := t.Context()

	svc := serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").Namespace(ns).On(hardware.H100).Accelerators(1)
	rel, err := env.Client.Apply(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := env.Kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "qwen-chat"}, &d); err != nil {
		t.Fatal(err)
	}
	if got := d.Spec.Template.Spec.Containers[0].Resources.Limits["nvidia.com/gpu"]; got.String() != "1" {
		t.Errorf("the stored Deployment asks for %s GPUs, want 1", got.String())
	}
	for _, ref := range rel.Objects {
		if err := cubetest.MarkObject(ctx, env.Kube, ref, cube.Ready, "", ""); err != nil {
			t.Fatal(err)
		}
	}
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(30*time.Second))
	if err != nil || st.Phase != cube.Ready {
		t.Fatalf("wait: %v, %v", st.Phase, err)
	}

	// Strict: a field the server does not know is an error.
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName("strict")
	u.Object["dataa"] = map[string]any{"k": "v"}
	err = env.CreateStrict(ctx, u)
	if err == nil || !apierrors.IsBadRequest(err) {
		t.Errorf("an unknown field: %v, want a BadRequest", err)
	}
	cm := &corev1.ConfigMap{}
	cm.SetNamespace(ns)
	cm.SetName("applied")
	cm.Data = map[string]string{"k": "v"}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	if err := env.ApplyStrict(ctx, cm, "adopter"); err != nil {
		t.Fatal(err)
	}
	if cm.UID == "" {
		t.Error("ApplyStrict did not fill in what the server stored")
	}
}
