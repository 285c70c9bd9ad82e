package notebook_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/golden"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/pod"
	"github.com/cubestudio/cube/vgpu"
)

var istio = map[string]string{"kubernetes.io/metadata.name": "istio-system"}

// variant is one hardware setting of the golden and API-server tests.
type variant struct {
	name  string
	apply func(*notebook.Notebook) *notebook.Notebook
}

var variants = []variant{
	{"cpu", func(n *notebook.Notebook) *notebook.Notebook {
		return n.CPU("2").Memory("8Gi").SharedMemory("2Gi").
			Env("TZ", "Asia/Shanghai").
			PVC("team-datasets", "/data").
			Storage("20Gi", "fast-ssd")
	}},
	{"h100", func(n *notebook.Notebook) *notebook.Notebook {
		return n.On(hardware.H100).Accelerators(2).CPU("16").Memory("128Gi")
	}},
	{"a100-hami-slice", func(n *notebook.Notebook) *notebook.Notebook {
		return n.Slice(vgpu.Slice(hardware.A100_80G).Memory("20Gi").Cores(30)).CPU("4").Memory("32Gi")
	}},
	{"ascend910b3", func(n *notebook.Notebook) *notebook.Notebook {
		return n.On(hardware.Ascend910B3).Accelerators(1).CPU("8").Memory("64Gi")
	}},
}

var kinds = []struct {
	name string
	new  func(name, user string) *notebook.Notebook
}{
	{"jupyter", notebook.Jupyter},
	{"vscode", notebook.VSCode},
	{"rstudio", notebook.RStudio},
}

// sample is a complete notebook of one kind and variant in namespace.
func sample(kind int, v variant, namespace string) *notebook.Notebook {
	k := kinds[kind]
	n := k.new(k.name+"-"+v.name, "alice").
		Namespace(namespace).
		Credential(pod.SecretKeyRef{Name: "alice-credentials", Key: k.name}).
		AllowNamespace(istio)
	return v.apply(n)
}

func TestGolden(t *testing.T) {
	for ki, k := range kinds {
		for _, v := range variants {
			t.Run(k.name+"-"+v.name, func(t *testing.T) {
				golden.AssertRender(t, k.name+"-"+v.name+".golden", sample(ki, v, "team-a"))
			})
		}
	}
}

// objects renders n and splits out its four objects.
func objects(t *testing.T, n *notebook.Notebook) (*networkingv1.NetworkPolicy, *corev1.Service, *corev1.Service, *appsv1.StatefulSet) {
	t.Helper()
	objs, err := n.Objects()
	require.NoError(t, err)
	require.Len(t, objs, 4)
	for _, o := range objs {
		assert.NotEmpty(t, o.GetObjectKind().GroupVersionKind().Kind, "%T has TypeMeta", o)
	}
	return objs[0].(*networkingv1.NetworkPolicy), objs[1].(*corev1.Service), objs[2].(*corev1.Service), objs[3].(*appsv1.StatefulSet)
}

func TestJupyterObjects(t *testing.T) {
	nb := notebook.Jupyter("alice-lab", "alice").
		Namespace("team-a").
		Credential(pod.SecretKeyRef{Name: "alice-token", Key: "token"}).
		Storage("50Gi", "fast-ssd").
		MaxLifetime(72*time.Hour).
		AllowNamespace(istio).
		AllowPods(nil, map[string]string{"app": "culler"})
	policy, headless, ui, sts := objects(t, nb)

	sel := map[string]string{cube.LabelRelease: "alice-lab", cube.LabelManagedBy: cube.ManagedBy}
	wantLabels := map[string]string{
		cube.LabelName: "alice-lab", cube.LabelManagedBy: cube.ManagedBy, cube.LabelPartOf: "alice-lab",
		cube.LabelKind: notebook.Kind, cube.LabelRelease: "alice-lab",
		notebook.LabelIDE: "jupyter", notebook.LabelUser: "alice",
	}

	// StatefulSet.
	assert.Equal(t, metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}, sts.TypeMeta)
	assert.Equal(t, "alice-lab", sts.Name)
	assert.Equal(t, "team-a", sts.Namespace)
	assert.Equal(t, wantLabels, sts.Labels)
	assert.Equal(t, map[string]string{
		notebook.AnnotationBaseURL:     "/notebook/team-a/alice-lab/",
		notebook.AnnotationMaxLifetime: "72h0m0s",
	}, sts.Annotations)
	assert.Nil(t, sts.Spec.Replicas, "replicas are left to the server default so that Stop/Start own them")
	assert.Equal(t, "alice-lab-headless", sts.Spec.ServiceName)
	assert.Equal(t, sel, sts.Spec.Selector.MatchLabels)
	assert.Equal(t, &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}, sts.Spec.PersistentVolumeClaimRetentionPolicy)
	require.Len(t, sts.Spec.VolumeClaimTemplates, 1)
	claim := sts.Spec.VolumeClaimTemplates[0]
	assert.Equal(t, "home", claim.Name)
	assert.Equal(t, wantLabels, claim.Labels)
	assert.Equal(t, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, claim.Spec.AccessModes)
	assert.Equal(t, "50Gi", ptr.To(claim.Spec.Resources.Requests[corev1.ResourceStorage]).String())
	assert.Equal(t, ptr.To("fast-ssd"), claim.Spec.StorageClassName)
	assert.Equal(t, "home-alice-lab-0", notebook.HomeClaimName("alice-lab"))

	// Pod.
	spec := sts.Spec.Template.Spec
	assert.Equal(t, wantLabels, sts.Spec.Template.Labels)
	assert.Equal(t, &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To[int64](1000),
		RunAsGroup:          ptr.To[int64](100),
		FSGroup:             ptr.To[int64](100),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}, spec.SecurityContext)
	require.Len(t, spec.Containers, 1)
	c := spec.Containers[0]
	assert.Equal(t, "notebook", c.Name)
	assert.Equal(t, notebook.DefaultJupyterImage, c.Image)
	assert.Nil(t, c.Command, "the Docker Stacks entrypoint stays")
	assert.Equal(t, []string{
		"start-notebook.py",
		"--ServerApp.ip=0.0.0.0",
		"--ServerApp.port=8888",
		"--ServerApp.base_url=/notebook/team-a/alice-lab/",
		"--ServerApp.root_dir=/home/jovyan",
	}, c.Args)
	assert.Equal(t, []corev1.EnvVar{{Name: "JUPYTER_TOKEN", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "alice-token"}, Key: "token"},
	}}, {Name: "NB_PREFIX", Value: "/notebook/team-a/alice-lab"}}, c.Env)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8888, Protocol: corev1.ProtocolTCP}}, c.Ports)
	probe := &corev1.HTTPGetAction{Path: "/notebook/team-a/alice-lab/api", Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}
	assert.Equal(t, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: probe}, PeriodSeconds: 5, TimeoutSeconds: 3, FailureThreshold: 60}, c.StartupProbe)
	assert.Equal(t, &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: probe}, PeriodSeconds: 10, TimeoutSeconds: 3, FailureThreshold: 3}, c.ReadinessProbe)
	assert.Nil(t, c.LivenessProbe)
	assert.Equal(t, []corev1.VolumeMount{{Name: "home", MountPath: "/home/jovyan"}}, c.VolumeMounts)
	assert.Equal(t, &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}, c.SecurityContext)
	assert.Empty(t, spec.Volumes)

	// Services.
	port := corev1.ServicePort{Name: "http", Port: 8888, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}
	assert.Equal(t, metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, headless.TypeMeta)
	assert.Equal(t, "alice-lab-headless", headless.Name)
	assert.Equal(t, wantLabels, headless.Labels)
	assert.Equal(t, corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: sel, Ports: []corev1.ServicePort{port}}, headless.Spec)
	assert.Equal(t, "alice-lab", ui.Name)
	assert.Equal(t, corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: sel, Ports: []corev1.ServicePort{port}}, ui.Spec)

	// NetworkPolicy.
	assert.Equal(t, metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"}, policy.TypeMeta)
	assert.Equal(t, networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: sel},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(8888))}},
			From: []networkingv1.NetworkPolicyPeer{
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: istio}},
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "culler"}}},
			},
		}},
	}, policy.Spec)
}

func TestVSCodeObjects(t *testing.T) {
	_, _, ui, sts := objects(t, notebook.VSCode("bob-code", "bob").
		Credential(pod.SecretKeyRef{Name: "bob-password", Key: "password"}).
		AllowNamespace(istio).
		AddArgs("--disable-workspace-trust"))
	assert.Empty(t, sts.Namespace, "no namespace: the client's")
	assert.Empty(t, sts.Annotations, "no base URL, no lifetime")
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, notebook.DefaultVSCodeImage, c.Image)
	assert.Equal(t, []string{"/usr/bin/entrypoint.sh"}, c.Command)
	assert.Equal(t, []string{
		"--bind-addr", "0.0.0.0:8080", "--auth", "password", "--disable-telemetry", "/home/coder",
		"--disable-workspace-trust",
	}, c.Args, "the caller's args follow the server's")
	assert.Equal(t, []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{
		SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "bob-password"}, Key: "password"},
	}}}, c.Env)
	assert.Equal(t, "/healthz", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/healthz", c.StartupProbe.HTTPGet.Path)
	assert.Equal(t, int32(8080), ui.Spec.Ports[0].Port)
	sc := sts.Spec.Template.Spec.SecurityContext
	assert.Equal(t, ptr.To[int64](1000), sc.RunAsUser)
	assert.Equal(t, ptr.To[int64](1000), sc.RunAsGroup)
	assert.Equal(t, ptr.To[int64](1000), sc.FSGroup)
	assert.Equal(t, []corev1.VolumeMount{{Name: "home", MountPath: "/home/coder"}}, c.VolumeMounts)
}

func TestRStudioObjects(t *testing.T) {
	_, _, _, sts := objects(t, notebook.RStudio("carol-r", "carol").
		Credential(pod.SecretKeyRef{Name: "carol-password", Key: "password"}).
		AllowNamespace(istio).
		ServerPort(8000))
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, notebook.DefaultRStudioImage, c.Image)
	assert.Equal(t, []string{"/usr/lib/rstudio-server/bin/rserver"}, c.Command)
	assert.Equal(t, []string{
		"--server-daemonize=0", "--www-address=0.0.0.0", "--www-port=8000", "--server-user=rstudio",
		"--auth-none=0", "--auth-pam-helper-path=pam-helper",
	}, c.Args)
	assert.Equal(t, []corev1.EnvVar{
		{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "carol-password"}, Key: "password"}}},
		{Name: "USER", Value: "rstudio"},
	}, c.Env)
	assert.Equal(t, "/", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, []corev1.ContainerPort{{Name: "http", ContainerPort: 8000, Protocol: corev1.ProtocolTCP}}, c.Ports)
	assert.Equal(t, []corev1.VolumeMount{
		{Name: "home", MountPath: "/home/rstudio"},
		{Name: "rstudio-run", MountPath: "/run"},
		{Name: "rstudio-lib", MountPath: "/var/lib/rstudio-server"},
		{Name: "tmp", MountPath: "/tmp"},
	}, c.VolumeMounts)
	empty := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	assert.Equal(t, []corev1.Volume{
		{Name: "rstudio-run", VolumeSource: empty},
		{Name: "rstudio-lib", VolumeSource: empty},
		{Name: "tmp", VolumeSource: empty},
	}, sts.Spec.Template.Spec.Volumes)
	assert.Equal(t, ptr.To[int64](1000), sts.Spec.Template.Spec.SecurityContext.FSGroup)
}

func TestHardwareComesFromThePodBuilder(t *testing.T) {
	_, _, _, sts := objects(t, sample(0, variants[1], "team-a")) // jupyter on 2×H100
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, "2", quantity(c.Resources.Limits, "nvidia.com/gpu"))
	require.NotEmpty(t, sts.Spec.Template.Spec.Volumes)
	shm := sts.Spec.Template.Spec.Volumes[0]
	assert.Equal(t, hardware.SharedMemoryVolume, shm.Name)
	assert.Equal(t, corev1.StorageMediumMemory, shm.EmptyDir.Medium)
	assert.Equal(t, "4Gi", shm.EmptyDir.SizeLimit.String(), "2Gi per GPU, from hardware.Apply")
	assert.Contains(t, c.VolumeMounts, corev1.VolumeMount{Name: hardware.SharedMemoryVolume, MountPath: hardware.SharedMemoryPath})

	_, _, _, sliced := objects(t, sample(0, variants[2], "team-a")) // HAMi slice
	lim := sliced.Spec.Template.Spec.Containers[0].Resources.Limits
	assert.Equal(t, "1", quantity(lim, "nvidia.com/gpu"))
	assert.Equal(t, "20480", quantity(lim, "nvidia.com/gpumem"), "MiB")
	assert.Equal(t, "30", quantity(lim, "nvidia.com/gpucores"))

	_, _, _, npu := objects(t, sample(0, variants[3], "team-a")) // Ascend 910B3
	assert.Equal(t, "1", quantity(npu.Spec.Template.Spec.Containers[0].Resources.Limits, "huawei.com/Ascend910"))
	assert.Equal(t, "910B3", npu.Spec.Template.Spec.NodeSelector["node.kubernetes.io/npu.chip.name"])
}

func quantity(l corev1.ResourceList, name corev1.ResourceName) string {
	q, ok := l[name]
	if !ok {
		return "<unset>"
	}
	return q.String()
}

func TestNoCredentialLiteral(t *testing.T) {
	for ki := range kinds {
		var buf bytes.Buffer
		require.NoError(t, cube.Render(&buf, sample(ki, variants[0], "team-a")))
		out := buf.String()
		assert.Contains(t, out, "secretKeyRef:")
		assert.NotContains(t, out, "--ServerApp.token")
		assert.NotContains(t, out, "--IdentityProvider.token")
		assert.NotContains(t, out, "--password")
	}
}

func TestCustomCommandReplacesTheServer(t *testing.T) {
	_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").
		Namespace("ns").
		Image("ccr.ccs.tencentyun.com/cube-studio/notebook:jupyter-ubuntu22.04").
		Command("jupyter", "lab").
		Args("--port=8888", "--ServerApp.base_url=/notebook/ns/lab/").
		Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).
		AllowNamespace(istio))
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Equal(t, []string{"jupyter", "lab"}, c.Command)
	assert.Equal(t, []string{"--port=8888", "--ServerApp.base_url=/notebook/ns/lab/"}, c.Args)
	assert.Equal(t, "JUPYTER_TOKEN", c.Env[0].Name, "the credential is still wired")
}

func TestSecurityContextKeepsWhatTheCallerSet(t *testing.T) {
	_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").
		Namespace("ns").
		Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).
		AllowNamespace(istio).
		On(hardware.Ascend910B3).Accelerators(1).
		// HwHiAiUser's group, to open the NPU device nodes.
		PodSecurityContext(&corev1.PodSecurityContext{SupplementalGroups: []int64{1000}, RunAsUser: ptr.To[int64](1234)}).
		SecurityContext(&corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(true)}))
	sc := sts.Spec.Template.Spec.SecurityContext
	assert.Equal(t, []int64{1000}, sc.SupplementalGroups)
	assert.Equal(t, ptr.To[int64](1234), sc.RunAsUser, "the caller's user wins")
	assert.Equal(t, ptr.To[int64](100), sc.RunAsGroup, "unset fields get the image's")
	assert.Equal(t, ptr.To(true), sc.RunAsNonRoot)
	csc := sts.Spec.Template.Spec.Containers[0].SecurityContext
	assert.Equal(t, ptr.To(true), csc.AllowPrivilegeEscalation)
	assert.Equal(t, []corev1.Capability{"ALL"}, csc.Capabilities.Drop)
}

func TestFreshObjectsAndNoAliasing(t *testing.T) {
	ns := map[string]string{"team": "a"}
	nb := notebook.Jupyter("lab", "alice").Namespace("ns").Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).AllowNamespace(ns)
	ns["team"] = "changed"
	first, err := nb.Objects()
	require.NoError(t, err)
	first[3].(*appsv1.StatefulSet).Spec.Template.Spec.Containers[0].Args[0] = "mutated"
	first[3].(*appsv1.StatefulSet).Labels["x"] = "y"
	first[0].(*networkingv1.NetworkPolicy).Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels["team"] = "mutated"
	first[1].(*corev1.Service).Spec.Selector["x"] = "y"

	policy, headless, ui, sts := objects(t, nb)
	assert.Equal(t, "start-notebook.py", sts.Spec.Template.Spec.Containers[0].Args[0])
	assert.NotContains(t, sts.Labels, "x")
	assert.Equal(t, map[string]string{"team": "a"}, policy.Spec.Ingress[0].From[0].NamespaceSelector.MatchLabels)
	assert.NotContains(t, headless.Spec.Selector, "x")
	assert.NotContains(t, ui.Spec.Selector, "x")

	built, err := nb.Build()
	require.NoError(t, err)
	assert.Equal(t, sts, built)
}

func TestBaseURL(t *testing.T) {
	_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").BaseURL("/hub/user/alice/").Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).AllowNamespace(istio))
	c := sts.Spec.Template.Spec.Containers[0]
	assert.Contains(t, c.Args, "--ServerApp.base_url=/hub/user/alice/")
	assert.Equal(t, "/hub/user/alice/api", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "/hub/user/alice/", sts.Annotations[notebook.AnnotationBaseURL])

	_, _, _, root := objects(t, notebook.Jupyter("lab", "alice").BaseURL("/").Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).AllowNamespace(istio))
	assert.Equal(t, "/api", root.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
}

// fieldErrors lists an Objects error as "Type field" strings.
func fieldErrors(t *testing.T, err error) []string {
	t.Helper()
	require.Error(t, err)
	var agg utilerrors.Aggregate
	require.True(t, errors.As(err, &agg), "error is a field.ErrorList aggregate: %v", err)
	var out []string
	for _, e := range agg.Errors() {
		var fe *field.Error
		require.True(t, errors.As(e, &fe), "%v is a *field.Error", e)
		out = append(out, string(fe.Type)+" "+fe.Field)
	}
	return out
}

func TestValidationErrors(t *testing.T) {
	valid := func(n *notebook.Notebook) *notebook.Notebook {
		return n.Namespace("ns").Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).AllowNamespace(istio)
	}
	long := strings.Repeat("a", notebook.MaxNameLength+1)
	cases := []struct {
		name string
		nb   *notebook.Notebook
		want []string
	}{
		{"empty name", valid(notebook.Jupyter("", "alice")), []string{"FieldValueRequired metadata.name"}},
		{"bad name", valid(notebook.VSCode("Alice_Lab", "alice")), []string{"FieldValueInvalid metadata.name"}},
		{"name starting with a digit", valid(notebook.VSCode("1lab", "alice")), []string{"FieldValueInvalid metadata.name"}},
		{"name too long", valid(notebook.VSCode(long, "alice")), []string{"FieldValueTooLong metadata.name"}},
		{"bad namespace", valid(notebook.VSCode("lab", "alice")).Namespace("Team A"), []string{"FieldValueInvalid metadata.namespace"}},
		{"empty user", valid(notebook.Jupyter("lab", "")), []string{"FieldValueRequired user"}},
		{"bad user", valid(notebook.Jupyter("lab", "alice@example.com")), []string{"FieldValueInvalid user"}},
		{"missing token secret", notebook.Jupyter("lab", "alice").Namespace("ns").AllowNamespace(istio), []string{"FieldValueRequired credential"}},
		{"missing password secret", notebook.RStudio("lab", "alice").AllowNamespace(istio), []string{"FieldValueRequired credential"}},
		{"empty secret name and key", valid(notebook.VSCode("lab", "alice")).Credential(pod.SecretKeyRef{Name: "", Key: ""}), []string{"FieldValueRequired credential.name", "FieldValueRequired credential.key"}},
		{"bad secret name and key", valid(notebook.VSCode("lab", "alice")).Credential(pod.SecretKeyRef{Name: "My Secret", Key: "a/b"}), []string{"FieldValueInvalid credential.name", "FieldValueInvalid credential.key"}},
		{"base URL without trailing slash", valid(notebook.Jupyter("lab", "alice")).BaseURL("/notebook/ns/lab"), []string{"FieldValueInvalid baseURL"}},
		{"relative base URL", valid(notebook.Jupyter("lab", "alice")).BaseURL("notebook/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with dot-dot", valid(notebook.Jupyter("lab", "alice")).BaseURL("/a/../b/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with double slash", valid(notebook.Jupyter("lab", "alice")).BaseURL("/a//b/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with query", valid(notebook.Jupyter("lab", "alice")).BaseURL("/a/?x=1/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with space", valid(notebook.Jupyter("lab", "alice")).BaseURL("/my lab/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with escape", valid(notebook.Jupyter("lab", "alice")).BaseURL("/my%20lab/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL with host", valid(notebook.Jupyter("lab", "alice")).BaseURL("//evil.example/"), []string{"FieldValueInvalid baseURL"}},
		{"base URL on code-server", valid(notebook.VSCode("lab", "alice")).BaseURL("/x/"), []string{"FieldValueForbidden baseURL"}},
		{"jupyter without namespace or base URL", notebook.Jupyter("lab", "alice").Credential(pod.SecretKeyRef{Name: "t", Key: "k"}).AllowNamespace(istio), []string{"FieldValueRequired metadata.namespace"}},
		{"bad storage size", valid(notebook.Jupyter("lab", "alice")).Storage("ten gigs", ""), []string{"FieldValueInvalid storage.size"}},
		{"zero storage size", valid(notebook.Jupyter("lab", "alice")).Storage("0", ""), []string{"FieldValueInvalid storage.size"}},
		{"negative storage size", valid(notebook.Jupyter("lab", "alice")).Storage("-1Gi", ""), []string{"FieldValueInvalid storage.size"}},
		{"bad storage class", valid(notebook.Jupyter("lab", "alice")).Storage("1Gi", "Fast SSD"), []string{"FieldValueInvalid storage.storageClass"}},
		{"relative home", valid(notebook.Jupyter("lab", "alice")).HomeDir("home/alice"), []string{"FieldValueInvalid homeDir"}},
		{"root home", valid(notebook.Jupyter("lab", "alice")).HomeDir("/"), []string{"FieldValueInvalid homeDir"}},
		{"bad port", valid(notebook.Jupyter("lab", "alice")).ServerPort(70000), []string{"FieldValueInvalid serverPort"}},
		{"negative lifetime", valid(notebook.Jupyter("lab", "alice")).MaxLifetime(-time.Hour), []string{"FieldValueInvalid maxLifetime"}},
		{"nobody allowed", notebook.Jupyter("lab", "alice").Namespace("ns").Credential(pod.SecretKeyRef{Name: "t", Key: "k"}), []string{"FieldValueRequired networkPolicy.from"}},
		{"every namespace allowed", valid(notebook.Jupyter("lab", "alice")).AllowNamespace(nil), []string{"FieldValueInvalid networkPolicy.from[1].namespaceSelector"}},
		{"bad allowed labels", valid(notebook.Jupyter("lab", "alice")).AllowPods(map[string]string{"bad key!": "x"}, map[string]string{"app": "bad value!"}),
			[]string{"FieldValueInvalid networkPolicy.from[1].namespaceSelector.matchLabels[bad key!]", "FieldValueInvalid networkPolicy.from[1].podSelector.matchLabels[app]"}},
		{"credential env set by hand", valid(notebook.Jupyter("lab", "alice")).Env("JUPYTER_TOKEN", "secret"), []string{"FieldValueInvalid env[JUPYTER_TOKEN]"}},
		{"rstudio USER set by hand", valid(notebook.RStudio("lab", "alice")).Env("USER", "root"), []string{"FieldValueInvalid env[USER]"}},
		{"volume on the home", valid(notebook.Jupyter("lab", "alice")).EmptyDir("scratch", "/home/jovyan"), []string{"FieldValueDuplicate spec.template.spec.containers[0].volumeMounts"}},
		{"volume named home", valid(notebook.Jupyter("lab", "alice")).AddVolume(corev1.Volume{Name: "home", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/x"),
			[]string{"FieldValueDuplicate spec.template.spec.volumes[0].name"}},
		{"volume over rstudio's scratch", valid(notebook.RStudio("lab", "alice")).EmptyDir("scratch", "/tmp"), []string{"FieldValueDuplicate spec.template.spec.containers[0].volumeMounts"}},
		{"port taken", valid(notebook.Jupyter("lab", "alice")).Port("http", 9999), []string{"FieldValueDuplicate spec.template.spec.containers[0].ports"}},
		{"GPUs without a profile", valid(notebook.Jupyter("lab", "alice")).Accelerators(1), []string{"FieldValueRequired spec.template.on"}},
		{"bad shared memory", valid(notebook.Jupyter("lab", "alice")).SharedMemory("lots"), []string{"FieldValueInvalid spec.template.sharedMemory"}},
		{"bad CPU", valid(notebook.Jupyter("lab", "alice")).CPU("many"), []string{"FieldValueInvalid spec.template.spec.containers[0].resources.requests[cpu]", "FieldValueInvalid spec.template.spec.containers[0].resources.limits[cpu]"}},
		{"everything at once", notebook.Jupyter("Bad", "").Storage("x", "").BaseURL("nope"),
			[]string{"FieldValueInvalid metadata.name", "FieldValueRequired user", "FieldValueInvalid baseURL", "FieldValueRequired credential", "FieldValueInvalid storage.size", "FieldValueRequired networkPolicy.from"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := tc.nb.Objects()
			assert.Nil(t, objs)
			got := fieldErrors(t, err)
			assert.ElementsMatch(t, tc.want, got, "error: %v", err)
			_, buildErr := tc.nb.Build()
			assert.Equal(t, err.Error(), buildErr.Error())
		})
	}
}

func TestValidNamesAtTheLimit(t *testing.T) {
	name := strings.Repeat("a", notebook.MaxNameLength)
	_, err := notebook.VSCode(name, "a.user_name-1").Credential(pod.SecretKeyRef{Name: "t", Key: "k"}).AllowNamespace(istio).Objects()
	require.NoError(t, err)
	assert.Len(t, notebook.HeadlessServiceName(name), 61, "fits a DNS label")
}

// FuzzBaseURL checks that Objects never panics on a base URL and that every
// base URL it accepts is one Jupyter and a proxy read the same way: an
// absolute, clean path ending in a slash, passed through unchanged.
func FuzzBaseURL(f *testing.F) {
	for _, seed := range []string{"/", "/notebook/team-a/lab/", "/a/../b/", "//host/", "/a b/", "/%2e%2e/", "/a?b/", "/a#b/", "", "x/", "/ü/"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, base string) {
		nb := notebook.Jupyter("lab", "alice").BaseURL(base).Credential(pod.SecretKeyRef{Name: "t", Key: "token"}).AllowNamespace(istio)
		sts, err := nb.Build()
		if err != nil {
			require.Contains(t, fieldErrors(t, err), "FieldValueInvalid baseURL")
			return
		}
		require.True(t, strings.HasPrefix(base, "/") && strings.HasSuffix(base, "/"), base)
		require.False(t, base != "/" && filepath.Clean(base)+"/" != base, "clean: %q", base)
		require.NotContains(t, base, "//")
		require.Equal(t, base, sts.Annotations[notebook.AnnotationBaseURL])
		require.Equal(t, base+"api", sts.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Path)
		require.Contains(t, sts.Spec.Template.Spec.Containers[0].Args, "--ServerApp.base_url="+base)
	})
}

// A notebook does not create DRA claims yet, so a profile whose devices
// come through one is refused, naming the setting, rather than rendering a
// pod that refers to a claim template nobody creates.
func TestNotebookRefusesADRAProfile(t *testing.T) {
	nb := notebook.Jupyter("lab", "alice").Namespace("team").On(hardware.T4.Plugin(hardware.NVIDIADRA)).Accelerators(1).
		Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"})
	_, err := nb.Objects()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.template.on: Forbidden: profile T4 asks for its devices through a DRA claim")
	assert.Contains(t, err.Error(), "does not create yet")

	withoutDevices, err := notebook.Jupyter("lab", "alice").Namespace("team").On(hardware.T4.Plugin(hardware.NVIDIADRA)).
		Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(map[string]string{"kubernetes.io/metadata.name": "ingress"}).Objects()
	require.NoError(t, err, "no accelerators, no claim")
	assert.NotEmpty(t, withoutDevices)
}

// The three ways a Jupyter image starts: the Docker Stacks' start-notebook.py
// (default), Kubeflow's s6 service reading NB_PREFIX
// (kubeflow/kubeflow components/example-notebook-servers/jupyter/s6/
// services.d/jupyterlab/run), and plain `jupyter server`.
func TestJupyterLaunchers(t *testing.T) {
	jupyter := func(l notebook.Launcher) corev1.Container {
		t.Helper()
		_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").Namespace("team-a").
			Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio).Launch(l))
		return sts.Spec.Template.Spec.Containers[0]
	}
	serverApp := []string{
		"--ServerApp.ip=0.0.0.0",
		"--ServerApp.port=8888",
		"--ServerApp.base_url=/notebook/team-a/lab/",
		"--ServerApp.root_dir=/home/jovyan",
	}
	prefix := corev1.EnvVar{Name: "NB_PREFIX", Value: "/notebook/team-a/lab"}

	stacks := jupyter(notebook.LaunchDockerStacks)
	assert.Nil(t, stacks.Command)
	assert.Equal(t, append([]string{"start-notebook.py"}, serverApp...), stacks.Args)
	assert.Contains(t, stacks.Env, prefix)

	kubeflow := jupyter(notebook.LaunchKubeflow)
	assert.Nil(t, kubeflow.Command, "the image's /init runs its s6 service")
	assert.Nil(t, kubeflow.Args)
	assert.Contains(t, kubeflow.Env, prefix, "the s6 service passes --ServerApp.base_url=${NB_PREFIX}")
	assert.Equal(t, "/notebook/team-a/lab/api", kubeflow.ReadinessProbe.HTTPGet.Path)

	server := jupyter(notebook.LaunchJupyterServer)
	assert.Equal(t, []string{"jupyter", "server"}, server.Command)
	assert.Equal(t, append(serverApp, "--ServerApp.open_browser=False"), server.Args)
	assert.Contains(t, server.Env, prefix)

	// A base URL of "/" is an empty prefix, as Kubeflow's images expect.
	_, _, _, sts := objects(t, notebook.Jupyter("lab", "alice").BaseURL("/").Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio))
	assert.Contains(t, sts.Spec.Template.Spec.Containers[0].Env, corev1.EnvVar{Name: "NB_PREFIX", Value: ""})
}

func TestJupyterLauncherErrors(t *testing.T) {
	base := func() *notebook.Notebook {
		return notebook.Jupyter("lab", "alice").Namespace("team-a").Credential(pod.SecretKeyRef{Name: "lab-token", Key: "token"}).AllowNamespace(istio)
	}
	_, err := base().Launch(notebook.LaunchKubeflow).ServerPort(9000).HomeDir("/data").Args("--debug").Objects()
	requireFieldErrors(t, err,
		fieldErr{field.ErrorTypeInvalid, "serverPort", "Kubeflow's images listen on 8888"},
		fieldErr{field.ErrorTypeInvalid, "homeDir", "Kubeflow's images serve their $HOME"},
		fieldErr{field.ErrorTypeInvalid, "args", "Kubeflow's images take no arguments"},
	)
	_, err = base().Launch(notebook.LaunchKubeflow).ServerPort(8888).HomeDir("/home/jovyan").Objects()
	assert.NoError(t, err, "what the image fixes may be spelled out")
	_, err = base().Launch("conda").Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeNotSupported, "launcher", `"docker-stacks", "kubeflow", "jupyter-server"`})
	_, err = notebook.VSCode("code", "bob").Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).AllowNamespace(istio).Launch(notebook.LaunchKubeflow).Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeForbidden, "launcher", "only Jupyter notebooks take a launcher"})
	_, err = base().Env("NB_PREFIX", "/elsewhere").Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeInvalid, "env[NB_PREFIX]", "is set by the notebook"})
}

// Every launcher's objects are what the API server accepts.
func TestApplyStrictLaunchers(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cc := cube.NewFromClient(env.Client, cube.Namespace(ns))
	for _, l := range []notebook.Launcher{notebook.LaunchDockerStacks, notebook.LaunchKubeflow, notebook.LaunchJupyterServer} {
		nb := notebook.Jupyter("lab-"+string(l), "alice").Namespace(ns).Credential(pod.SecretKeyRef{Name: "tok", Key: "token"}).AllowNamespace(istio).
			Launch(l).Image("kubeflownotebookswg/jupyter-scipy:v1.9.0")
		_, err := cc.Apply(t.Context(), nb)
		require.NoError(t, err, l)
	}
}

// A nil Notebook records nothing and says so; a zero one names its
// constructors.
func TestNilAndZeroNotebook(t *testing.T) {
	var nb *notebook.Notebook
	require.NotPanics(t, func() {
		nb = nb.BaseURL("/x/").Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).Storage("1Gi", "").HomeDir("/h").ServerPort(1).
			MaxLifetime(time.Hour).AllowNamespace(istio).AllowPods(nil, nil).Launch(notebook.LaunchKubeflow)
	})
	assert.Nil(t, nb)
	const msg = "notebook: the *Notebook is nil: make one with Jupyter, VSCode or RStudio"
	_, err := nb.Objects()
	assert.EqualError(t, err, msg)
	_, err = nb.Build()
	assert.EqualError(t, err, msg)
	// Render finds the typed nil before asking the notebook.
	assert.EqualError(t, cube.Render(io.Discard, nb), "render workload 0: workload *notebook.Notebook is nil")

	_, err = (&notebook.Notebook{}).Credential(pod.SecretKeyRef{Name: "s", Key: "k"}).Objects()
	requireFieldErrors(t, err, fieldErr{field.ErrorTypeRequired, "ide", "use Jupyter, VSCode or RStudio"})
}

// fieldErr is one expected field error: its type, path and a substring of
// its detail (or of its bad value).
type fieldErr struct {
	typ    field.ErrorType
	path   string
	detail string
}

// requireFieldErrors asserts that err holds exactly the wanted field errors.
func requireFieldErrors(t *testing.T, err error, want ...fieldErr) {
	t.Helper()
	require.Error(t, err)
	var agg utilerrors.Aggregate
	require.True(t, errors.As(err, &agg), "error is a field.ErrorList aggregate: %v", err)
	require.Len(t, agg.Errors(), len(want), "errors:\n%v", err)
	for _, w := range want {
		found := false
		for _, e := range agg.Errors() {
			var fe *field.Error
			if errors.As(e, &fe) && fe.Type == w.typ && fe.Field == w.path &&
				(strings.Contains(fe.Detail, w.detail) || strings.Contains(fmt.Sprint(fe.BadValue), w.detail) || strings.Contains(fe.Error(), w.detail)) {
				found = true
			}
		}
		assert.True(t, found, "missing %s at %s (%q) in:\n%v", w.typ, w.path, w.detail, err)
	}
}
