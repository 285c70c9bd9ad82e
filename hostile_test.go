package cube_test

// Hostile input: nil and zero receivers, typed nils, bad options. Each
// case panicked or was accepted silently before; each is now an error
// that says what is wrong.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/quantity"
	"github.com/cubestudio/cube/internal/testsupport/testpod"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// nilWorkload is a typed nil: a *T in a Workload whose Objects would
// dereference it.
type nilWorkload struct{ objs []client.Object }

func (w *nilWorkload) Objects() ([]client.Object, error) { return w.objs, nil }

func TestRenderRefusesNilsAndWhatApplyRefuses(t *testing.T) {
	var buf bytes.Buffer
	good := testpod.Pod("ok", nil)
	assert.EqualError(t, cube.Render(nil, good), "render: writer is nil")
	var typedNil *nilWorkload
	for name, tc := range map[string]struct {
		w    cube.Workload
		want string
	}{
		"nil":                {nil, "render workload 0: workload is nil"},
		"typed nil":          {typedNil, "render workload 0: workload *cube_test.nilWorkload is nil"},
		"nil WorkloadFunc":   {cube.WorkloadFunc(nil), "render workload 0: workload cube.WorkloadFunc is nil"},
		"nil PyTorchJob":     {(*train.PyTorchJob)(nil), "render workload 0: workload *train.PyTorchJob is nil"},
		"Objects(nil)":       {cube.Objects(nil), "render workload 0: cube.Objects: object 0 is nil"},
		"Objects(typed nil)": {cube.Objects((*corev1.Pod)(nil)), "render workload 0: cube.Objects: object 0 is nil"},
		"nil object":         {&nilWorkload{objs: []client.Object{(*corev1.ConfigMap)(nil)}}, "render workload 0: workload *cube_test.nilWorkload: object 0 is nil"},
		"no objects":         {cube.Objects(), "render workload 0: workload cube.WorkloadFunc has no objects"},
		"no release label": {cube.Objects(&corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "loose"},
		}), `render workload 0: ConfigMap "loose" has no cube.dev/release label: build it with cube.Identity`},
		"two releases": {cube.Objects(
			&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: cube.Identity{Kind: "x", Release: "a"}.ObjectMeta("a", "", nil, nil)},
			&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: cube.Identity{Kind: "x", Release: "b"}.ObjectMeta("b", "", nil, nil)},
		), `render workload 0: ConfigMap "b" belongs to release "b", not "a": a workload is one release`},
	} {
		t.Run(name, func(t *testing.T) {
			buf.Reset()
			assert.EqualError(t, cube.Render(&buf, tc.w), tc.want)
			assert.Empty(t, buf.String(), "nothing is written when a workload is refused")
			// Apply refuses the same, with the same words, before it talks
			// to the cluster.
			cluster := cubetest.NewCluster(nil)
			_, err := cluster.Client.Apply(t.Context(), tc.w)
			require.Error(t, err)
			assert.Equal(t, "apply: "+tc.want[len("render workload 0: "):], err.Error())
		})
	}
	require.NoError(t, cube.Render(&buf, good))
	_, err := cube.WorkloadFunc(nil).Objects()
	assert.EqualError(t, err, "cube: WorkloadFunc is nil")
}

func TestNilClientsAndReleases(t *testing.T) {
	ctx := t.Context()
	var typedNil *nilWorkload
	cluster := cubetest.NewCluster(nil)
	_, err := cluster.Client.Apply(ctx, typedNil)
	assert.EqualError(t, err, "apply: workload *cube_test.nilWorkload is nil")
	_, err = cluster.Client.Apply(ctx, (*train.PyTorchJob)(nil))
	assert.EqualError(t, err, "apply: workload *train.PyTorchJob is nil")
	_, err = cluster.Client.Apply(ctx, testpod.Pod("p", nil), nil)
	assert.NoError(t, err, "a nil ApplyOption is no option")

	var nilClient *cube.Client
	_, err = nilClient.Apply(ctx, testpod.Pod("p", nil))
	assert.EqualError(t, err, "apply: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = nilClient.Release(ctx, "ns", "r")
	assert.EqualError(t, err, "get release ns/r: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = nilClient.Releases(ctx, "")
	assert.EqualError(t, err, "list releases: cube: client is nil: make one with cube.New or cube.NewFromClient")
	_, err = (&cube.Client{}).Apply(ctx, testpod.Pod("p", nil))
	assert.EqualError(t, err, "apply: cube: client has no controller-runtime client: make one with cube.New or cube.NewFromClient")

	_, err = cube.NewFromClient(nil).Apply(ctx, testpod.Pod("p", nil))
	assert.EqualError(t, err, "apply: cube: controller-runtime client is nil")
	_, err = cube.NewFromClient(cluster.Fake, cube.Namespace("Bad_NS")).Apply(ctx, testpod.Pod("p", nil))
	assert.ErrorContains(t, err, `apply: cube: namespace "Bad_NS": a lowercase RFC 1123 label must consist of`)
	_, err = cube.New(&rest.Config{Host: "https://127.0.0.1:1"}, cube.Namespace("Bad_NS"))
	assert.ErrorContains(t, err, `cube: namespace "Bad_NS"`)
	_, err = cube.New(nil)
	assert.EqualError(t, err, "cube: rest config is nil")
	queue := schema.GroupKind{Group: "scheduling.volcano.sh", Kind: "Queue"}
	_, err = cube.NewFromClient(cluster.Fake, cube.Kinds(cube.Kind{GroupKind: queue}, cube.Kind{Status: cube.ExistsKind(queue).Status})).Apply(ctx, testpod.Pod("p", nil))
	assert.EqualError(t, err, "apply: cube: Kinds: Queue.scheduling.volcano.sh has no Status reader (cube.ExistsKind reads a kind Ready once it exists); cube: Kinds: entry 1 has no GroupKind.Kind")

	var nilRelease *cube.Release
	_, err = nilRelease.Wait(ctx, cube.Ready)
	assert.EqualError(t, err, "wait: cube: release is nil")
	_, err = nilRelease.Status(ctx)
	assert.EqualError(t, err, "status: cube: release is nil")
	assert.EqualError(t, nilRelease.Delete(ctx), "delete: cube: release is nil")
	_, err = nilRelease.Logs(ctx)
	assert.EqualError(t, err, "logs: cube: release is nil")
	zero := &cube.Release{Name: "made-up"}
	_, err = zero.Wait(ctx, cube.Ready)
	assert.EqualError(t, err, `wait: cube: release "made-up" was not made by a cube.Client: get it from Apply, Client.Release or Client.Releases`)
	_, err = zero.Status(ctx)
	assert.ErrorContains(t, err, "was not made by a cube.Client")

	// The error types of the package print on nil receivers too.
	assert.Equal(t, "<nil WaitError>", (*cube.WaitError)(nil).Error())
	assert.Equal(t, "<nil ConflictError>", (*cube.ConflictError)(nil).Error())
	assert.Equal(t, "<nil QuotaExceededError>", (*cube.QuotaExceededError)(nil).Error())
	assert.Equal(t, "<nil PodSecurityError>", (*cube.PodSecurityError)(nil).Error())
	assert.NoError(t, (*cube.ConflictError)(nil).Unwrap())
}

func TestWaitRefusesANegativeTimeout(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil)
	rel, err := cluster.Client.Apply(ctx, testpod.Pod("p", nil))
	require.NoError(t, err)
	start := time.Now()
	_, err = rel.Wait(ctx, cube.Ready, cube.Timeout(-time.Second), nil)
	assert.EqualError(t, err, "wait: timeout -1s is negative")
	assert.False(t, errors.Is(err, cube.ErrTimeout), "not a timeout: a bad option")
	assert.Less(t, time.Since(start), time.Second)
}

// rdmaJob is the quickstart's training job: InfiniBand adds IPC_LOCK.
func rdmaJob(ns string) *train.PyTorchJob {
	return train.PyTorch("llama-sft").Namespace(ns).
		Image("nvcr.io/nvidia/pytorch:24.05-py3").Torchrun("/workspace/sft.py").
		Workers(1).On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).
		CPU("16").Memory("64Gi")
}

func TestApplyChecksPodSecurityBeforeApplying(t *testing.T) {
	ctx := t.Context()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-nlp"))
	_, err := cluster.Client.Apply(ctx, tenant.New("team-nlp"))
	require.NoError(t, err)

	_, err = cluster.Client.Apply(ctx, rdmaJob("team-nlp"))
	var ps *cube.PodSecurityError
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "baseline:latest", ps.Level)
	rels, err := cluster.Client.Releases(ctx, "team-nlp")
	require.NoError(t, err)
	require.Len(t, rels, 1, "nothing of the job was recorded or applied")
	assert.Equal(t, "team-nlp", rels[0].Name)

	// A Deployment's template is a pod template too, and a tenant applied
	// with its workload is judged by the labels it applies.
	dep := cube.Objects(&appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: cube.Identity{Kind: "web", Release: "web"}.ObjectMeta("web", "", nil, nil),
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			HostNetwork: true, Containers: []corev1.Container{{Name: "web", Image: "nginx"}},
		}}},
	})
	_, err = cluster.Client.Apply(ctx, dep)
	require.ErrorAs(t, err, &ps)
	assert.Equal(t, "spec.template", ps.Violations[0].Template)
	assert.Equal(t, "host namespaces (hostNetwork=true)", ps.Violations[0].Reasons)

	// The privileged level admits it.
	_, err = cluster.Client.Apply(ctx, tenant.New("team-nlp").AllowRDMA())
	require.NoError(t, err)
	_, err = cluster.Client.Apply(ctx, rdmaJob("team-nlp"))
	require.NoError(t, err)

	// A namespace the client cannot find is left to the API server.
	other := cubetest.NewCluster(nil, cube.Namespace("elsewhere"))
	_, err = other.Client.Apply(context.WithoutCancel(ctx), rdmaJob(""))
	require.NoError(t, err)
}

func TestExportedFunctionsTakeNil(t *testing.T) {
	assert.Equal(t, cube.ObjectRef{}, cube.RefOf(nil))
	assert.Equal(t, cube.ObjectRef{}, cube.RefOf((*corev1.Pod)(nil)))
	assert.Equal(t, cube.ObjectStatus{Phase: cube.Missing, Reason: "NotFound"}, cube.ReadStatus(nil))
	assert.Nil(t, cube.PodProblems(nil))
	_, err := cube.ToUnstructured((*corev1.Pod)(nil))
	assert.EqualError(t, err, "object is nil")
}

// TestQuantitiesApimachineryCannotRoundAreRefused: resource.ParseQuantity
// (apimachinery v0.37.2) runs for hours on a decimal exponent beyond int32
// ("E6854775807" wraps to -1735158785, see internal/quantity); every
// quantity a user gives cube is refused at once instead.
func TestQuantitiesApimachineryCannotRoundAreRefused(t *testing.T) {
	const hostile = "92233720E6854775807"
	start := time.Now()
	_, ferr := quantity.ParseField(nil, hostile, quantity.NonNegative)
	require.NotNil(t, ferr)
	assert.Contains(t, ferr.Error(), "beyond ±1000")
	_, err := train.PyTorch("pt").Image("img").CPU(hostile).Memory("1e-5000").Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `resources.requests[cpu]: Invalid value: "92233720E6854775807"`)
	assert.Contains(t, err.Error(), `resources.requests[memory]: Invalid value: "1e-5000"`)
	_, err = tenant.New("team").CPU(hostile).Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "beyond ±1000")
	assert.Less(t, time.Since(start), 5*time.Second)
}

// webApp is a small release built by hand: a ConfigMap, a Deployment and a
// Service, deliberately listed workload-first to exercise apply ordering.
func webApp(name, ns string, replicas int32) cube.Workload {
	id := cube.Identity{Kind: "web", Release: name, PartOf: "shop"}
	return cube.WorkloadFunc(func() ([]client.Object, error) {
		return []client.Object{
			&appsv1.Deployment{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
				Spec: appsv1.DeploymentSpec{
					Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: id.Selector("")},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: id.Labels()},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{
							Name: "web", Image: "nginx:1.27",
							Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
							EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name + "-config"}}}},
						}}},
					},
				},
			},
			&corev1.Service{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
				ObjectMeta: id.ObjectMeta(name, ns, nil, nil),
				Spec: corev1.ServiceSpec{
					Selector: id.Selector(""),
					Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
				},
			},
			&corev1.ConfigMap{
				TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: id.ObjectMeta(name+"-config", ns, nil, nil),
				Data:       map[string]string{"MODE": "prod"},
			},
		}, nil
	})
}

// deployments returns a release of n Deployments.
func deployments(release, ns string, n int) []client.Object {
	id := cube.Identity{Kind: "bench", Release: release}
	out := make([]client.Object, n)
	one := int32(1)
	for i := range n {
		out[i] = &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: id.ObjectMeta(fmt.Sprintf("%s-%d", release, i), ns, nil, nil),
			Spec: appsv1.DeploymentSpec{
				Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprintf("%s-%d", release, i)}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": fmt.Sprintf("%s-%d", release, i)}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name: "app", Image: "nginx:1.27",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resourceMust("100m")}},
					}}},
				},
			},
		}
	}
	return out
}
