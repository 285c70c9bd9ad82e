package podspec

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
)

type kindA struct{ Handle[kindA] }
type kindB struct{ Handle[kindB] }

// copied are the fields of Builder and Meta that CopySettings copies; the
// rest are each builder's own. A field added to either without a line in
// CopySettings fails here.
var (
	copiedBuilder = []string{"Meta", "image", "pullPolicy", "command", "args", "workingDir", "env", "envFrom", "requests", "limits",
		"profile", "devices", "devicesSet", "slice", "fabric", "sharedMemory", "volumes", "nodeSelector", "tolerations", "affinity",
		"priorityClass", "serviceAccount", "pullSecrets", "scheduler", "queue", "podLabels", "podAnnotations", "podSecurity",
		"containerSecure", "ports", "hostNetwork", "edge", "sharedClaim", "problems"}
	ownBuilder = []string{"rendersClaims"}
	copiedMeta = []string{"namespace", "partOf", "labels", "annotations", "localQueue", "workloadPriority"}
	ownMeta    = []string{"self", "kind", "name"}
)

func TestCopySettingsCoversEveryField(t *testing.T) {
	check := func(typ reflect.Type, copied, own []string) {
		for i := range typ.NumField() {
			name := typ.Field(i).Name
			if !slices.Contains(copied, name) && !slices.Contains(own, name) {
				t.Errorf("%s.%s: neither copied by CopySettings nor listed as the builder's own", typ.Name(), name)
			}
		}
		if n := len(copied) + len(own); n != typ.NumField() {
			t.Errorf("%s has %d fields, the lists %d", typ.Name(), typ.NumField(), n)
		}
	}
	check(reflect.TypeOf(Builder[kindA]{}), copiedBuilder, ownBuilder)
	check(reflect.TypeOf(Meta[kindA]{}), copiedMeta, ownMeta)
}

// The copy renders what the source renders, keeps the destination's kind
// and name, and shares nothing the source can change afterwards.
func TestCopySettings(t *testing.T) {
	var a kindA
	src := Of(&a.Handle)
	src.Init(&a, "kinda", "from")
	src.Namespace("ns")
	src.Label("team", "x")
	src.Image("img:1")
	src.Command("python3")
	src.Env("K", "V")
	src.CPU("1")
	src.Memory("1Gi")
	src.On(hardware.CPU)
	src.NodeSelector("zone", "a")
	src.PodLabel("p", "1")
	src.AddVolume(corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}, "/data")
	src.Port("bad name", 1)
	src.LocalQueue("team")
	src.WorkloadPriority("high")
	var b kindB
	dst := Of(&b.Handle)
	dst.Init(&b, "kindb", "to")
	CopySettings(dst, src)
	src.Env("LATER", "1")
	src.Label("later", "1")
	src.NodeSelector("later", "1")

	opts := TemplateOptions{Container: "c"}
	want, wantErrs := src.Template(nil, opts)
	got, errs := dst.Template(nil, opts)
	if len(wantErrs) == 0 || len(errs) != len(wantErrs) {
		t.Fatalf("the source's problems (the bad port name) did not come along: %v, the source's %v", errs, wantErrs)
	}
	if got.Spec.Containers[0].Image != "img:1" || !slices.Equal(got.Spec.Containers[0].Command, []string{"python3"}) {
		t.Errorf("container: %+v", got.Spec.Containers[0])
	}
	if len(got.Spec.Containers[0].Env) != len(want.Spec.Containers[0].Env)-1 {
		t.Errorf("env: got %v, the source has since %v", got.Spec.Containers[0].Env, want.Spec.Containers[0].Env)
	}
	if _, ok := got.Spec.NodeSelector["later"]; ok {
		t.Errorf("node selector shared with the source: %v", got.Spec.NodeSelector)
	}
	if got.Spec.NodeSelector["zone"] != "a" || got.Labels["p"] != "1" || len(got.Spec.Volumes) != 1 {
		t.Errorf("pod: %+v", got)
	}
	meta := dst.ObjectMeta("to")
	if meta.Namespace != "ns" || meta.Labels["team"] != "x" || meta.Labels["later"] != "" ||
		meta.Labels[KueueQueueLabel] != "team" || meta.Labels[KueuePriorityLabel] != "high" {
		t.Errorf("metadata: %+v", meta)
	}
	if meta.Labels["cube.dev/kind"] != "kindb" || meta.Labels["cube.dev/release"] != "to" {
		t.Errorf("the destination's identity was not kept: %v", meta.Labels)
	}
}
