package ops_test

import (
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
)

func ExampleAccounting() {
	start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	pod := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: "team-a",
			Labels: cube.Identity{Kind: "vllm", Release: "qwen"}.Labels()},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{hardware.LabelGPUProduct: hardware.H100.Product},
			Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
				Limits: corev1.ResourceList{hardware.ResourceNVIDIAGPU: resource.MustParse("2")}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &metav1.Time{Time: start}},
	}
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	u, err := ops.Accounting([]corev1.Pod{pod}, day, day.Add(24*time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = u.WriteCSV(os.Stdout)
	// Output:
	// tenant,release,kind,accelerator,share,device_hours,pods,from,to
	// team-a,qwen,vllm,H100-SXM-80GB,whole,32.0000,1,2026-11-01T00:00:00Z,2026-11-02T00:00:00Z
}

func ExampleAccounting_errors() {
	_, err := ops.Accounting(nil, time.Time{}, time.Time{})
	fmt.Println(err)
	// Output:
	// usage: from: must be set (it is the zero time)
	// to: must be set (it is the zero time)
	// to: 0001-01-01T00:00:00Z must be after from 0001-01-01T00:00:00Z
}

func ExampleLease() {
	start := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	lease, err := ops.Lease("alice-a100", "team-a").Holder("alice").Workload(notebook.Kind, "lab").
		Accelerators(hardware.A100_80G, 1).Period(start, 7*24*time.Hour).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	end, _ := ops.Expiry(lease)
	fmt.Println(lease.Namespace, lease.Name, *lease.Spec.HolderIdentity, *lease.Spec.LeaseDurationSeconds, end.Format(time.RFC3339))
	_, err = ops.Lease("bob", "team-a").Build()
	fmt.Println(err)
	// Output:
	// team-a alice-a100 alice 604800 2026-11-08T09:00:00Z
	// lease bob: [spec.holderIdentity: Required value: set the user with Holder, metadata.annotations[ops.cube.dev/workload-release]: Required value: name the leased workload with Workload(kind, release), metadata.annotations[ops.cube.dev/accelerator]: Required value: lease accelerators with Accelerators(profile, n), metadata.annotations[ops.cube.dev/devices]: Invalid value: 0: must be at least 1, spec.acquireTime: Required value: set the start with Period, spec.leaseDurationSeconds: Invalid value: "0s": must be between a second and 68 years]
}

func ExampleIdle() {
	now := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "qwen-0", Namespace: "team-a",
		Labels: cube.Identity{Kind: "vllm", Release: "qwen"}.Labels()}}
	var samples []ops.Sample
	for at := now.Add(-72 * time.Hour); !at.After(now); at = at.Add(time.Hour) {
		samples = append(samples, ops.Sample{At: at, Value: 4})
	}
	series := []ops.DeviceSeries{{Exporter: "dcgm", Namespace: "team-a", Pod: "qwen-0", Device: "GPU-0", Utilisation: samples}}
	findings, err := ops.Idle(series, []corev1.Pod{pod}, now, ops.ServingIdle())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range findings {
		fmt.Println(f)
	}
	// Output:
	// team-a/qwen (vllm): mean 4.0%, peak 4.0% since 2026-11-01T00:00:00Z → scale-down
}
