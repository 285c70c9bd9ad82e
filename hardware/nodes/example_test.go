package nodes_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/hardware/nodes"
)

// Read lists the Nodes a client sees (here a fake one) and matches them to
// catalogue profiles; the list options narrow it to a pool.
func ExampleRead() {
	h100 := corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "gpu-1", Labels: map[string]string{
			"pool": "train", hardware.LabelGPUProduct: "NVIDIA-H100-80GB-HBM3", hardware.LabelGPUCount: "8",
		}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{hardware.ResourceNVIDIAGPU: resource.MustParse("8")}},
	}
	cpu := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-1", Labels: map[string]string{"pool": "web"}}}
	c := fake.NewClientBuilder().WithObjects(&h100, &cpu).Build()

	inv, err := nodes.Read(context.Background(), c, client.MatchingLabels{"pool": "train"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, n := range inv.Nodes {
		fmt.Println(n.Name, n.Profile.Name, n.Accelerators)
	}
	// Output:
	// gpu-1 H100-SXM-80GB 8
}
