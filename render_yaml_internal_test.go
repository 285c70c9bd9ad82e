package cube

import (
	"testing"

	yaml "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/yamlenc"
)

// TestFromJSONMatchesDocument holds the writer's path from a typed
// object's JSON to its path from the unstructured content, on objects with
// quantities, int-or-strings, empty timestamps, status and edge-case
// strings.
func TestFromJSONMatchesDocument(t *testing.T) {
	replicas := int32(3)
	objs := []client.Object{
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team-a", Labels: map[string]string{"app": "web", "cube.dev/release": "web"}, Annotations: map[string]string{"note": "a: b", "n": "1e3"}},
			Spec: appsv1.DeploymentSpec{
				Replicas: &replicas,
				Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("25%")), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx:1.27", Args: []string{"--port", "8080", "yes", "", "-", "a #b", "it's"},
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1.5Gi")}},
					Env:       []corev1.EnvVar{{Name: "RATIO", Value: "0.5"}, {Name: "EMPTY"}},
				}}}},
			},
			Status: appsv1.DeploymentStatus{Replicas: 2},
		},
		&corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromString("http")}}, Selector: map[string]string{}},
		},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "c"},
			Data: map[string]string{"on": "off", "multi": "a\nb", "uni": "caf\u00e9", "q": `say "hi"`, "a1": "x", "a2": "y"}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Data: map[string]string{"k": "v"}},
	}
	wrote := 0
	for _, obj := range objs {
		u, err := ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		var want yamlenc.Writer
		if !want.Document(u.Object) {
			b, _ := yaml.Marshal(u.Object)
			want.Append(b)
		}
		w := yamlenc.Get()
		if w.FromJSON(obj) {
			wrote++
			if string(w.Bytes()) != string(want.Bytes()) {
				t.Errorf("%s %s:\nfrom the unstructured content:\n%s\nfrom JSON:\n%s", u.GetKind(), u.GetName(), want.Bytes(), w.Bytes())
			}
		} else if len(w.Bytes()) != 0 {
			t.Errorf("%s: declined, but left %q", u.GetName(), w.Bytes())
		}
		w.Release()
	}
	if wrote < 3 {
		t.Errorf("FromJSON wrote %d of %d objects", wrote, len(objs))
	}
}
