package cube

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// yamlEdgeStrings are strings yaml.v2 treats specially: words that read
// back as booleans or null, numbers in every notation, timestamps,
// indicators, blanks at the ends, text long enough to fold, and what only
// yaml.v2 writes (line breaks, tabs, Unicode).
var yamlEdgeStrings = []string{
	"", "y", "Y", "yes", "No", "on", "OFF", "true", "False", "null", "~", "Null", "yes please", "onion",
	"0", "1", "-1", "+1", "007", "1_000", "0x1F", "0o17", "0b101", "-0b11", "1e3", "1.5", ".5", "-.5", "+.inf", ".inf", ".NaN", "1.", "1e", "0x", "0b2",
	"100m", "16Gi", "1600Gi", "2", "8", "2024-01-01", "2024-1-2T03:04:05Z", "1:20", "12:30:45", "1.2.3", "1-2",
	"-", "--model", "---", "...", "- x", "-x", ":", ":x", "a:", "a: b", "a:b", "nginx:1.27", "http://x/y", "#x", "a#b", "a #b", "?", "?x", "? x",
	"[x]", "x[0]", "{a}", "a,b", "&a", "*a", "!a", "|", ">", "'a'", `"a"`, "it's", `say "hi"`, `back\slash`, "%x", "@x", "`x`",
	" a", "a ", "a  b", "echo $(LR) > /tmp/o",
	strings.Repeat("word ", 20), strings.Repeat("x", 100), strings.Repeat("k", 130),
	"line\nbreak", "tab\there", "caf\u00e9",
}

func writeYAML(doc map[string]any) ([]byte, bool) {
	var w yamlWriter
	ok := w.document(doc)
	return w.buf, ok
}

func randomYAMLString(rng *rand.Rand) string {
	if rng.IntN(3) == 0 {
		return yamlEdgeStrings[rng.IntN(len(yamlEdgeStrings))]
	}
	const alphabet = "abcxyzXYZ0123456789 :#-._/'\"\\+@[]{},?!|>*&%`~ebo"
	b := make([]byte, rng.IntN(12))
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randomYAMLValue(rng *rand.Rand, depth int) any {
	switch k := rng.IntN(10); {
	case depth < 4 && k < 3:
		m := map[string]any{}
		for range rng.IntN(5) {
			m[randomYAMLString(rng)] = randomYAMLValue(rng, depth+1)
		}
		return m
	case depth < 4 && k < 5:
		s := make([]any, rng.IntN(4))
		for i := range s {
			s[i] = randomYAMLValue(rng, depth+1)
		}
		return s
	case k == 5:
		return []int64{0, 1, -7, math.MaxInt64}[rng.IntN(4)]
	case k == 6:
		return []float64{0.5, -1e21, 3, math.Inf(1), math.NaN(), 1e-7}[rng.IntN(6)]
	case k == 7:
		return []any{true, false, nil}[rng.IntN(3)]
	}
	return randomYAMLString(rng)
}

// TestAppendYAMLMatchesYAMLv2 holds Render's own writer to yaml.v2's
// output on random documents made of edge cases: whatever the writer
// writes is what yaml.v2 writes, and it writes most documents itself.
func TestAppendYAMLMatchesYAMLv2(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	written := 0
	const docs = 20000
	for i := range docs {
		doc := map[string]any{}
		for range 1 + rng.IntN(4) {
			doc[randomYAMLString(rng)] = randomYAMLValue(rng, 1)
		}
		want, err := yaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := writeYAML(doc)
		if !ok {
			continue
		}
		written++
		if string(got) != string(want) {
			t.Fatalf("document %d:\nyaml.v2:\n%s\nthe writer:\n%s", i, want, got)
		}
	}
	// Each key and value is an edge case a third of the time, so many
	// documents hold something only yaml.v2 writes; the rest must not.
	if written < docs/10 {
		t.Errorf("the writer wrote %d of %d documents", written, docs)
	}
	t.Logf("the writer wrote %d of %d documents", written, docs)
	for _, s := range yamlEdgeStrings {
		for _, doc := range []map[string]any{{"k": s}, {s: "v"}, {"k": []any{s}}, {"k": []any{map[string]any{s: s, "z": s}}}} {
			want, _ := yaml.Marshal(doc)
			if got, ok := writeYAML(doc); ok && string(got) != string(want) {
				t.Errorf("%q:\nyaml.v2:\n%s\nthe writer:\n%s", s, want, got)
			}
		}
	}
}

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
		var want yamlWriter
		if !want.document(u.Object) {
			want.buf, _ = yaml.Marshal(u.Object)
		}
		w := yamlWriters.Get().(*yamlWriter)
		if w.fromJSON(obj) {
			wrote++
			if string(w.buf) != string(want.buf) {
				t.Errorf("%s %s:\nfrom the unstructured content:\n%s\nfrom JSON:\n%s", u.GetKind(), u.GetName(), want.buf, w.buf)
			}
		} else if len(w.buf) != 0 {
			t.Errorf("%s: declined, but left %q", u.GetName(), w.buf)
		}
		w.reset()
	}
	if wrote < 3 {
		t.Errorf("fromJSON wrote %d of %d objects", wrote, len(objs))
	}
}
