package notebook_test

// Tests against the real kube-apiserver of internal/testsupport/testenv: every object is
// server-side applied with strict field validation, so a field the real
// schema does not know fails. No controllers run there: the StatefulSet
// controller's claim is created by hand where a test needs it.

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
)

func TestApplyStrictEveryKindAndVariant(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for ki, k := range kinds {
		for _, v := range variants {
			t.Run(k.name+"-"+v.name, func(t *testing.T) {
				nb := sample(ki, v, ns)
				want, err := nb.Build()
				require.NoError(t, err)
				rel, err := cc.Apply(t.Context(), nb)
				require.NoError(t, err)
				assert.Len(t, rel.Objects, 4)

				got := &appsv1.StatefulSet{}
				require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(want), got))
				assert.Equal(t, ptr.To[int32](1), got.Spec.Replicas, "the server defaults one replica")
				assert.Equal(t, want.Spec.Template.Spec.Containers[0].Args, got.Spec.Template.Spec.Containers[0].Args)
				assert.Equal(t, want.Spec.Template.Spec.Containers[0].Env, got.Spec.Template.Spec.Containers[0].Env)
				assert.Equal(t, resourceStrings(want.Spec.Template.Spec.Containers[0].Resources), resourceStrings(got.Spec.Template.Spec.Containers[0].Resources))
				assert.Equal(t, want.Spec.Template.Spec.SecurityContext, got.Spec.Template.Spec.SecurityContext)
				require.Len(t, got.Spec.VolumeClaimTemplates, 1)
				assert.Equal(t, quantity(want.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests, corev1.ResourceStorage),
					quantity(got.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests, corev1.ResourceStorage))
				assert.Equal(t, want.Spec.PersistentVolumeClaimRetentionPolicy, got.Spec.PersistentVolumeClaimRetentionPolicy)

				for _, name := range []string{want.Name, notebook.HeadlessServiceName(want.Name)} {
					svc := &corev1.Service{}
					require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, svc))
				}
				pol := &networkingv1.NetworkPolicy{}
				require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: want.Name}, pol))
				assert.Equal(t, istio, pol.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels)

				// Applying the same notebook again changes nothing.
				before := got.ResourceVersion
				_, err = cc.Apply(t.Context(), sample(ki, v, ns))
				require.NoError(t, err)
				again := &appsv1.StatefulSet{}
				require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(want), again))
				assert.Equal(t, before, again.ResourceVersion)
			})
		}
	}
}

// resourceStrings prints requests and limits, which the server stores
// with their canonical strings.
func resourceStrings(r corev1.ResourceRequirements) map[string]string {
	out := map[string]string{}
	for name, q := range r.Requests {
		out["requests."+string(name)] = q.String()
	}
	for name, q := range r.Limits {
		out["limits."+string(name)] = q.String()
	}
	return out
}

// applyNotebook applies a Jupyter notebook and creates the home claim the
// StatefulSet controller would create for its pod.
func applyNotebook(t *testing.T, env *testenv.Env, ns, name string) *notebook.Notebook {
	t.Helper()
	nb := notebook.Jupyter(name, "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: name + "-token", Key: "token"}).
		Storage("5Gi", "").MaxLifetime(time.Hour).AllowNamespace(istio)
	_, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(t.Context(), nb)
	require.NoError(t, err)
	sts, err := nb.Build()
	require.NoError(t, err)
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: notebook.HomeClaimName(name), Namespace: ns, Labels: sts.Spec.VolumeClaimTemplates[0].Labels},
		Spec:       sts.Spec.VolumeClaimTemplates[0].Spec,
	}
	require.NoError(t, env.CreateStrict(t.Context(), claim))
	return nb
}

func getSTS(t *testing.T, c client.Client, ns, name string) *appsv1.StatefulSet {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	require.NoError(t, c.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, sts))
	return sts
}

func TestStopStartKeepsTheHome(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	nb := applyNotebook(t, env, ns, "lab")
	created := getSTS(t, env.Client, ns, "lab")

	require.NoError(t, notebook.Stop(t.Context(), env.Client, ns, "lab"))
	stopped := getSTS(t, env.Client, ns, "lab")
	assert.Equal(t, ptr.To[int32](0), stopped.Spec.Replicas)
	assert.Equal(t, created.Spec.VolumeClaimTemplates, stopped.Spec.VolumeClaimTemplates, "claim template unchanged")
	assert.Equal(t, created.Spec.Template, stopped.Spec.Template)
	assert.NotContains(t, stopped.Annotations, notebook.AnnotationStopReason, "a user's Stop gives no reason")
	claim := &corev1.PersistentVolumeClaim{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "home-lab-0"}, claim), "the home claim survives")
	assert.Equal(t, "5Gi", quantity(claim.Spec.Resources.Requests, corev1.ResourceStorage))

	// Applying the notebook again neither conflicts with Stop nor restarts it.
	_, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(t.Context(), nb)
	require.NoError(t, err)
	assert.Equal(t, ptr.To[int32](0), getSTS(t, env.Client, ns, "lab").Spec.Replicas)

	before := time.Now().Add(-time.Second)
	require.NoError(t, notebook.Start(t.Context(), env.Client, ns, "lab"))
	started := getSTS(t, env.Client, ns, "lab")
	assert.Equal(t, ptr.To[int32](1), started.Spec.Replicas)
	assert.Equal(t, created.Spec.VolumeClaimTemplates, started.Spec.VolumeClaimTemplates, "claim template unchanged")
	renewed, err := time.Parse(time.RFC3339, started.Annotations[notebook.AnnotationRenewedAt])
	require.NoError(t, err)
	assert.False(t, renewed.Before(before.Truncate(time.Second)), "Start renews: %s", renewed)
	assert.Equal(t, "1h0m0s", started.Annotations[notebook.AnnotationMaxLifetime], "cube's annotations stay")
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "home-lab-0"}, claim))

	// The patches are recorded under their own field manager.
	var managers []string
	for _, mf := range started.ManagedFields {
		managers = append(managers, mf.Manager)
	}
	assert.Contains(t, managers, notebook.FieldManager)
	assert.Contains(t, managers, cube.DefaultFieldOwner+":"+ns+"/lab", "the release's own field manager")
}

func TestRenew(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	applyNotebook(t, env, ns, "lab")
	at := time.Date(2026, 7, 1, 8, 30, 0, 0, time.FixedZone("CST", 8*3600))
	require.NoError(t, notebook.Renew(t.Context(), env.Client, ns, "lab", at))
	assert.Equal(t, "2026-07-01T00:30:00Z", getSTS(t, env.Client, ns, "lab").Annotations[notebook.AnnotationRenewedAt])
}

func TestLifecycleErrors(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	err := notebook.Stop(t.Context(), env.Client, ns, "missing")
	require.Error(t, err)
	assert.True(t, apierrors.IsNotFound(err), "the API error is wrapped: %v", err)
	assert.ErrorContains(t, err, "stop notebook "+ns+"/missing")
	assert.ErrorContains(t, notebook.Start(t.Context(), env.Client, ns, "missing"), "start notebook")
	assert.ErrorContains(t, notebook.Renew(t.Context(), env.Client, ns, "missing", time.Now()), "renew notebook")

	// A StatefulSet cube did not build as a notebook is left alone.
	other := &appsv1.StatefulSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"},
		ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: ns, Labels: map[string]string{"app": "db"}},
		Spec: appsv1.StatefulSetSpec{
			Replicas: ptr.To[int32](3),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}},
			},
		},
	}
	require.NoError(t, env.CreateStrict(t.Context(), other))
	assert.ErrorContains(t, notebook.Stop(t.Context(), env.Client, ns, "db"), "is not a cube notebook")
	assert.Equal(t, ptr.To[int32](3), getSTS(t, env.Client, ns, "db").Spec.Replicas)
}
