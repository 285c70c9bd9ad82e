package testpod_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/cubestudio/cube/internal/testsupport/testpod"
)

func ExamplePod() {
	w := testpod.Pod("big", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64")}, "NET_ADMIN")
	objs, err := w.Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	pod := objs[0].(*corev1.Pod)
	c := pod.Spec.Containers[0]
	fmt.Println(pod.Name, c.Image, c.Resources.Limits.Cpu(), c.SecurityContext.Capabilities.Add)
	// Output: big busybox:1.36 64 [NET_ADMIN]
}
