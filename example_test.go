package cube_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/train"
)

func ExampleRender() {
	id := cube.Identity{Kind: "config", Release: "settings"}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: id.ObjectMeta("settings", "team-a", nil, nil),
		Data:       map[string]string{"LOG_LEVEL": "info"},
	}
	ns := &corev1.Namespace{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
		ObjectMeta: id.ObjectMeta("team-a", "", nil, nil),
	}
	// Namespaces render before what lives in them.
	if err := cube.Render(os.Stdout, cube.Objects(cm, ns)); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: v1
	// kind: Namespace
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: settings
	//     app.kubernetes.io/part-of: settings
	//     cube.dev/kind: config
	//     cube.dev/release: settings
	//   name: team-a
	// spec: {}
	// ---
	// apiVersion: v1
	// data:
	//   LOG_LEVEL: info
	// kind: ConfigMap
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: settings
	//     app.kubernetes.io/part-of: settings
	//     cube.dev/kind: config
	//     cube.dev/release: settings
	//   name: settings
	//   namespace: team-a
}

func ExampleIdentity() {
	id := cube.Identity{Kind: "vllm", Release: "qwen-chat", PartOf: "assistant"}
	fmt.Println(id.Labels())
	fmt.Println(id.Selector("server"))
	// Output:
	// map[app.kubernetes.io/managed-by:cube app.kubernetes.io/name:qwen-chat app.kubernetes.io/part-of:assistant cube.dev/kind:vllm cube.dev/release:qwen-chat]
	// map[app.kubernetes.io/component:server app.kubernetes.io/managed-by:cube cube.dev/release:qwen-chat]
}

// Apply a workload, wait for it, and read its status. The cluster here is
// cubetest's in-memory one; with cube.New(restConfig) it is a real cluster.
func ExampleClient_Apply() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", "", 2))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rel.Name, rel.Namespace, rel.Objects)

	// In a real cluster the Deployment controller does this.
	_ = cluster.MarkReady(ctx, rel)

	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(time.Minute))
	fmt.Println(st.Phase, err)
	for _, o := range st.Objects {
		fmt.Println(o)
	}
	// Output:
	// shop team-a [ConfigMap team-a/shop-config Service team-a/shop Deployment.apps team-a/shop]
	// Ready <nil>
	// ConfigMap team-a/shop-config Ready
	// Service team-a/shop Ready (Ready)
	// Deployment.apps team-a/shop Ready (Available: 2/2 available)
}

// Wait says what the pods are stuck on, and with FailOnStuckPods gives up
// as soon as one cannot recover by itself.
func ExampleFailOnStuckPods() {
	ctx := context.Background()
	// A pod of the release that cannot pull its image, as the kubelet
	// reports it.
	id := cube.Identity{Kind: "web", Release: "shop", PartOf: "shop"}
	stuck := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: id.ObjectMeta("shop-7d4b9-x2x7k", "team-a", nil, nil),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
			Name: "web",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
				Reason: "ImagePullBackOff", Message: `Back-off pulling image "nginx:1.27"`,
			}},
		}}},
	}
	cluster := cubetest.NewCluster([]client.Object{stuck}, cube.Namespace("team-a"))
	rel, err := cluster.Client.Apply(ctx, webApp("shop", "", 1))
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := rel.Wait(ctx, cube.Ready, cube.Timeout(time.Minute), cube.FailOnStuckPods)
	fmt.Println(errors.Is(err, cube.ErrFailed))
	fmt.Println(st.Phase, st.Reason)
	// Output:
	// true
	// Failed pod shop-7d4b9-x2x7k container web: ImagePullBackOff: Back-off pulling image "nginx:1.27"
}

// Applying a release again is declarative: what the workload no longer has
// is deleted (cube.NoPrune keeps it).
func ExampleClient_Apply_prune() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	if _, err := cluster.Client.Apply(ctx, webApp("shop", "", 2)); err != nil {
		fmt.Println(err)
		return
	}
	// The next version of the workload has no Service.
	noService := cube.WorkloadFunc(func() ([]client.Object, error) {
		objs, err := webApp("shop", "", 2).Objects()
		return slices.DeleteFunc(objs, func(o client.Object) bool { return o.GetObjectKind().GroupVersionKind().Kind == "Service" }), err
	})
	rel, err := cluster.Client.Apply(ctx, noService)
	fmt.Println(rel.Objects, err)
	fmt.Println("pruned:", rel.Pruned)
	// Output:
	// [ConfigMap team-a/shop-config Deployment.apps team-a/shop] <nil>
	// pruned: [Service team-a/shop]
}

// A client reads the kinds it was given: a PyTorchJob is Unknown to one
// that only knows the Kubernetes API's own kinds, and in progress to one
// given train's, whatever the program imports.
func ExampleReadStatus() {
	job, err := cube.ToUnstructured(must(train.PyTorch("sft").Image("busybox").Command("true").Build()))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cube.ReadStatus(job).Phase)
	fmt.Println(cube.ReadStatus(job, train.Kinds()...).Phase)
	fmt.Println(cube.ReadStatus(nil).Phase)
	// Output:
	// Unknown
	// InProgress
	// Missing
}

// A kind of your own whose objects have no state beyond existing (here a
// made-up CRD) reads Unknown until the client is given a reader for it;
// ExistsKind reads it Ready once it exists.
func ExampleExistsKind() {
	widget := &unstructured.Unstructured{}
	widget.SetAPIVersion("example.com/v1")
	widget.SetKind("Widget")
	widget.SetName("w")
	fmt.Println(cube.ReadStatus(widget).Phase, cube.ReadStatus(widget).Reason)
	exists := cube.ExistsKind(widget.GroupVersionKind().GroupKind())
	fmt.Println(cube.ReadStatus(widget, exists).Phase, cube.ReadStatus(widget, exists).Reason)
	// Output:
	// Unknown NoReader
	// Ready Exists
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
