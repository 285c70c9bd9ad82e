package label_test

// The Studio's objects are applied to the real kube-apiserver of
// internal/testsupport/testenv with strict field validation: a field the schema does
// not know fails. No kubelet runs there, so Label Studio does not start.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/pod"
)

func TestStudioAppliesStrictly(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for name, w := range map[string]cube.Workload{
		"sqlite":   label.Studio("ls-sqlite").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}),
		"postgres": label.Studio("ls-pg").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}).Postgres(pod.SecretKeyRef{Name: "db", Key: "password"}, "1Gi", ""),
		"external": label.Studio("ls-ext").Namespace(ns).Admin(pod.SecretKeyRef{Name: "a", Key: "email"}, pod.SecretKeyRef{Name: "a", Key: "password"}).Token(pod.SecretKeyRef{Name: "a", Key: "token"}).ExternalDatabase("rds"),
		"backend":  label.MLBackend("qwen-labeler", "registry.local/labeler:1").Namespace(ns).Model("http://qwen:8000", "qwen").APIKey(pod.SecretKeyRef{Name: "qwen-key", Key: "key"}),
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := w.Objects()
			require.NoError(t, err)
			rel, err := cc.Apply(t.Context(), w)
			require.NoError(t, err)
			assert.Len(t, rel.Objects, len(objs))
			want := objs[len(objs)-1].(*appsv1.Deployment)
			got := &appsv1.Deployment{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: want.Name}, got))
			assert.Equal(t, want.Spec.Template.Spec.Containers[0].Env, got.Spec.Template.Spec.Containers[0].Env)
			assert.Equal(t, want.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path, got.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
			before := got.ResourceVersion
			_, err = cc.Apply(t.Context(), w)
			require.NoError(t, err)
			again := &appsv1.Deployment{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: want.Name}, again))
			assert.Equal(t, before, again.ResourceVersion, "applying twice changes nothing")
		})
	}
}
