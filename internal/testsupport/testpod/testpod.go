package testpod

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
)

// Pod is a one-container pod of its own release (busybox sleeping an
// hour), requesting and limited to resources (nil: none) and adding
// capabilities to its container.
func Pod(name string, resources corev1.ResourceList, capabilities ...corev1.Capability) cube.Workload {
	id := cube.Identity{Kind: "pod", Release: name}
	c := corev1.Container{Name: "main", Image: "busybox:1.36", Command: []string{"sleep", "3600"}}
	if resources != nil {
		c.Resources = corev1.ResourceRequirements{Requests: resources, Limits: resources}
	}
	if len(capabilities) > 0 {
		c.SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: capabilities}}
	}
	return cube.Objects(&corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: id.ObjectMeta(name, "", nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{c}},
	})
}
