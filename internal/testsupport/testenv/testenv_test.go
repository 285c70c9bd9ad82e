package testenv_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/testsupport/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func pytorchJob(namespace string) *kubeflowv1.PyTorchJob {
	return &kubeflowv1.PyTorchJob{
		TypeMeta:   metav1.TypeMeta{APIVersion: kubeflowv1.GroupVersion.String(), Kind: kubeflowv1.PyTorchJobKind},
		ObjectMeta: metav1.ObjectMeta{Name: "mnist", Namespace: namespace},
		Spec: kubeflowv1.PyTorchJobSpec{
			PyTorchReplicaSpecs: map[kubeflowv1.ReplicaType]*kubeflowv1.ReplicaSpec{
				kubeflowv1.PyTorchJobReplicaTypeMaster: {
					Replicas:      ptr.To[int32](1),
					RestartPolicy: kubeflowv1.RestartPolicyOnFailure,
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
						Name:    kubeflowv1.PyTorchJobDefaultContainerName,
						Image:   "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime",
						Command: []string{"python", "train.py"},
					}}}},
				},
			},
		},
	}
}

func TestCreateStrictAcceptsTypedPyTorchJob(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	job := pytorchJob(ns)
	require.NoError(t, env.CreateStrict(t.Context(), job))
	assert.NotEmpty(t, job.UID, "CreateStrict writes the stored object back")

	stored := &kubeflowv1.PyTorchJob{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKeyFromObject(job), stored))
	master := stored.Spec.PyTorchReplicaSpecs[kubeflowv1.PyTorchJobReplicaTypeMaster]
	require.NotNil(t, master)
	assert.Equal(t, int32(1), *master.Replicas)
	assert.Equal(t, kubeflowv1.RestartPolicyOnFailure, master.RestartPolicy)
	require.Len(t, master.Template.Spec.Containers, 1)
	assert.Equal(t, "pytorch", master.Template.Spec.Containers[0].Name)
	assert.Equal(t, []string{"python", "train.py"}, master.Template.Spec.Containers[0].Command)
}

func TestCreateStrictRejectsUnknownFields(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	cases := map[string]struct {
		obj   map[string]any
		field string
	}{
		"pytorchjob spec": {
			obj: map[string]any{
				"apiVersion": "kubeflow.org/v1",
				"kind":       "PyTorchJob",
				"metadata":   map[string]any{"name": "typo", "namespace": ns},
				"spec": map[string]any{
					"pytorchReplicaSpecs": map[string]any{
						"Master": map[string]any{
							"replicas": int64(1),
							"template": map[string]any{"spec": map[string]any{"containers": []any{
								map[string]any{"name": "pytorch", "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime"},
							}}},
						},
					},
					"elasticPolcy": map[string]any{"minReplicas": int64(1)},
				},
			},
			field: `unknown field "spec.elasticPolcy"`,
		},
		"pytorchjob pod template": {
			obj: map[string]any{
				"apiVersion": "kubeflow.org/v1",
				"kind":       "PyTorchJob",
				"metadata":   map[string]any{"name": "typo-in-pod", "namespace": ns},
				"spec": map[string]any{
					"pytorchReplicaSpecs": map[string]any{
						"Master": map[string]any{
							"replicas": int64(1),
							"template": map[string]any{"spec": map[string]any{"containers": []any{
								map[string]any{"name": "pytorch", "image": "pytorch/pytorch:2.5.1-cuda12.4-cudnn9-runtime", "gpus": int64(1)},
							}}},
						},
					},
				},
			},
			field: `unknown field "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].gpus"`,
		},
		"deployment": {
			obj: map[string]any{
				"apiVersion": "apps/v1",
				"kind":       "Deployment",
				"metadata":   map[string]any{"name": "typo", "namespace": ns},
				"spec": map[string]any{
					"replica":  int64(1),
					"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
						"spec": map[string]any{"containers": []any{
							map[string]any{"name": "web", "image": "nginx:1.27"},
						}},
					},
				},
			},
			field: `unknown field "spec.replica"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := &unstructured.Unstructured{Object: tc.obj}
			err := env.CreateStrict(t.Context(), obj)
			require.Error(t, err)
			assert.True(t, apierrors.IsBadRequest(err), "want BadRequest, got %v", err)
			assert.ErrorContains(t, err, tc.field)

			// Nothing was stored.
			probe := &unstructured.Unstructured{}
			probe.SetGroupVersionKind(obj.GroupVersionKind())
			err = env.Client.Get(t.Context(), client.ObjectKeyFromObject(obj), probe)
			assert.True(t, apierrors.IsNotFound(err), "want NotFound, got %v", err)
		})
	}
}

func deployment(namespace string) *appsv1.Deployment {
	labels := map[string]string{"app": "web"}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		},
	}
}

func TestApplyStrict(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	dep := deployment(ns)
	require.NoError(t, env.ApplyStrict(t.Context(), dep, "cube-test"))
	assert.NotEmpty(t, dep.UID)
	assert.Equal(t, int32(2), *dep.Spec.Replicas)
	require.Len(t, dep.ManagedFields, 1)
	assert.Equal(t, "cube-test", dep.ManagedFields[0].Manager)
	assert.Equal(t, metav1.ManagedFieldsOperationApply, dep.ManagedFields[0].Operation)

	// Applying again with a change updates the same object.
	changed := deployment(ns)
	changed.Spec.Replicas = ptr.To[int32](3)
	require.NoError(t, env.ApplyStrict(t.Context(), changed, "cube-test"))
	assert.Equal(t, dep.UID, changed.UID)
	assert.Equal(t, int32(3), *changed.Spec.Replicas)

	unknown := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": "typo", "namespace": ns},
		"dat":        map[string]any{"k": "v"},
	}}
	err := env.ApplyStrict(t.Context(), unknown, "cube-test")
	require.Error(t, err)
	assert.ErrorContains(t, err, ".dat: field not declared in schema")
}

func TestInstalledKindsAreServed(t *testing.T) {
	env := testenv.Get(t)

	cases := []struct {
		gvk        schema.GroupVersionKind
		resource   string
		namespaced bool
	}{
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"}, "pytorchjobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "TFJob"}, "tfjobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MPIJob"}, "mpijobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "PaddleJob"}, "paddlejobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "XGBoostJob"}, "xgboostjobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1", Kind: "MXJob"}, "mxjobs", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "Experiment"}, "experiments", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "Trial"}, "trials", true},
		{schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "Suggestion"}, "suggestions", true},
		{schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Workflow"}, "workflows", true},
		{schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "CronWorkflow"}, "cronworkflows", true},
		{schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "WorkflowTemplate"}, "workflowtemplates", true},
		{schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ClusterWorkflowTemplate"}, "clusterworkflowtemplates", false},
		{schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}, "leaderworkersets", true},
		{schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayJob"}, "rayjobs", true},
		{schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayCluster"}, "rayclusters", true},
		{schema.GroupVersionKind{Group: "ray.io", Version: "v1", Kind: "RayService"}, "rayservices", true},
		{schema.GroupVersionKind{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"}, "jobs", true},
		{schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "Queue"}, "queues", false},
		{schema.GroupVersionKind{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"}, "podgroups", true},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"}, "httproutes", true},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "Gateway"}, "gateways", true},
		{schema.GroupVersionKind{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "GatewayClass"}, "gatewayclasses", false},
		{schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainJob"}, "trainjobs", true},
		{schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "TrainingRuntime"}, "trainingruntimes", true},
		{schema.GroupVersionKind{Group: "trainer.kubeflow.org", Version: "v1alpha1", Kind: "ClusterTrainingRuntime"}, "clustertrainingruntimes", false},
		{schema.GroupVersionKind{Group: "jobset.x-k8s.io", Version: "v1alpha2", Kind: "JobSet"}, "jobsets", true},
	}
	for _, tc := range cases {
		t.Run(tc.gvk.Kind+"."+tc.gvk.Group, func(t *testing.T) {
			list, err := env.Clientset.Discovery().ServerResourcesForGroupVersion(tc.gvk.GroupVersion().String())
			require.NoError(t, err)
			var found *metav1.APIResource
			for i := range list.APIResources {
				if list.APIResources[i].Name == tc.resource {
					found = &list.APIResources[i]
				}
			}
			require.NotNil(t, found, "%s not in discovery of %s", tc.resource, tc.gvk.GroupVersion())
			assert.Equal(t, tc.gvk.Kind, found.Kind)
			assert.Equal(t, tc.namespaced, found.Namespaced)
			assert.Contains(t, found.Verbs, "create")

			mapping, err := env.Client.RESTMapper().RESTMapping(tc.gvk.GroupKind(), tc.gvk.Version)
			require.NoError(t, err)
			assert.Equal(t, tc.gvk.GroupVersion().WithResource(tc.resource), mapping.Resource)
		})
	}
}

func TestSchemeKnowsTypedKinds(t *testing.T) {
	scheme, err := testenv.NewScheme()
	require.NoError(t, err)
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "", Version: "v1", Kind: "Pod"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"},
		{Group: "kubeflow.org", Version: "v1", Kind: "PyTorchJob"},
		{Group: "batch.volcano.sh", Version: "v1alpha1", Kind: "Job"},
		{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "Queue"},
		{Group: "scheduling.volcano.sh", Version: "v1beta1", Kind: "PodGroup"},
		{Group: "argoproj.io", Version: "v1alpha1", Kind: "Workflow"},
		{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"},
		{Group: "ray.io", Version: "v1", Kind: "RayJob"},
		{Group: "gateway.networking.k8s.io", Version: "v1", Kind: "HTTPRoute"},
	} {
		assert.True(t, scheme.Recognizes(gvk), "scheme does not know %s", gvk)
	}
	assert.False(t, scheme.Recognizes(schema.GroupVersionKind{Group: "kubeflow.org", Version: "v1beta1", Kind: "Experiment"}),
		"Katib has no Go types in the scheme")
}

func TestNamespaceIsFreshAndCleanedUp(t *testing.T) {
	env := testenv.Get(t)

	var first, second string
	t.Run("Owner/Sub Test_1", func(t *testing.T) {
		first = env.Namespace(t)
		second = env.Namespace(t)
		for _, name := range []string{first, second} {
			assert.Empty(t, validation.IsDNS1123Label(name), name)
			assert.True(t, strings.HasPrefix(name, "testnamespaceisfreshandcleanedup-owner-sub-test-1-"), name)
			assert.Len(t, name, len("testnamespaceisfreshandcleanedup-owner-sub-test-1-")+5)
			ns := &corev1.Namespace{}
			require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: name}, ns))
			assert.Equal(t, corev1.NamespaceActive, ns.Status.Phase)
		}
		assert.NotEqual(t, first, second)

		cm := &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "settings", Namespace: first},
			Data:       map[string]string{"k": "v"},
		}
		require.NoError(t, env.CreateStrict(t.Context(), cm))
		require.NoError(t, env.CreateStrict(t.Context(), pytorchJob(first)))
	})

	for _, name := range []string{first, second} {
		err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, &corev1.Namespace{})
		assert.True(t, apierrors.IsNotFound(err), "namespace %s: want NotFound, got %v", name, err)
	}
	configMaps := &corev1.ConfigMapList{}
	require.NoError(t, env.Client.List(t.Context(), configMaps, client.InNamespace(first)))
	assert.Empty(t, configMaps.Items, "the namespace's objects are deleted")
	jobs := &kubeflowv1.PyTorchJobList{}
	require.NoError(t, env.Client.List(t.Context(), jobs, client.InNamespace(first)))
	assert.Empty(t, jobs.Items, "the namespace's custom resources are deleted")
}

func TestNamespaceLongAndOddTestNames(t *testing.T) {
	env := testenv.Get(t)
	t.Run("---"+strings.Repeat("Ünïcode_ And Spaces ", 6)+"---", func(t *testing.T) {
		name := env.Namespace(t)
		assert.Empty(t, validation.IsDNS1123Label(name), name)
		assert.LessOrEqual(t, len(name), 63)
		assert.True(t, strings.HasPrefix(name, "testnamespacelongandoddtestnames-n-code-and-spaces-n-cod"), name)
	})
}

// Pods must be creatable without a service account controller, and
// PodSecurity admission must still enforce a namespace's level.
func TestPodAdmission(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	pod := func(name string, privileged bool) *corev1.Pod {
		return &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name:            "main",
				Image:           "busybox:1.37",
				SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(privileged)},
			}}},
		}
	}
	require.NoError(t, env.CreateStrict(t.Context(), pod("privileged-allowed", true)))

	nsObj := &corev1.Namespace{}
	require.NoError(t, env.Client.Get(t.Context(), client.ObjectKey{Name: ns}, nsObj))
	nsObj.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
	require.NoError(t, env.Client.Update(t.Context(), nsObj))

	// PodSecurity admission reads namespaces from an informer: the new
	// label reaches it shortly after the update, not with it.
	var err error
	attempt := 0
	require.Eventually(t, func() bool {
		attempt++
		err = env.CreateStrict(t.Context(), pod(fmt.Sprintf("privileged-denied-%d", attempt), true))
		return err != nil
	}, 30*time.Second, 50*time.Millisecond)
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	assert.ErrorContains(t, err, `violates PodSecurity "baseline:latest"`)
}

// ResourceQuota admission is on; it needs status.hard, which only the quota
// controller would write, so the test writes it.
func TestResourceQuotaAdmission(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)

	hard := corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("1")}
	quota := &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: "limits", Namespace: ns},
		Spec:       corev1.ResourceQuotaSpec{Hard: hard},
	}
	require.NoError(t, env.CreateStrict(t.Context(), quota))
	quota.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourceConfigMaps: resource.MustParse("0")}}
	require.NoError(t, env.Client.Status().Update(t.Context(), quota))

	configMap := func(name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		}
	}
	require.NoError(t, env.CreateStrict(t.Context(), configMap("first")))
	// Admission reads quotas through an informer, which may not have seen
	// the status update yet: a create that slips through is undone and
	// tried again until the quota is enforced.
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		second := configMap(fmt.Sprintf("second-%d", attempt))
		if err = env.CreateStrict(t.Context(), second); err != nil {
			break
		}
		require.NoError(t, env.Client.Delete(t.Context(), second))
		time.Sleep(100 * time.Millisecond)
	}
	require.Error(t, err)
	assert.True(t, apierrors.IsForbidden(err), "want Forbidden, got %v", err)
	assert.ErrorContains(t, err, "exceeded quota: limits")
}

func TestServerVersion(t *testing.T) {
	env := testenv.Get(t)
	info, err := env.Clientset.Discovery().ServerVersion()
	require.NoError(t, err)
	assert.Equal(t, "v1.37.2", info.GitVersion)
	assert.Equal(t, "1", info.Major)
	assert.Equal(t, "37", info.Minor)
	t.Logf("environment started in %s", env.StartupTime)
}
