package ops_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/ops"
)

// FuzzLease builds leases from arbitrary input: an error or a lease whose
// expiry is its start plus its period, never a panic.
func FuzzLease(f *testing.F) {
	f.Add("alice-a100", "team-a", "alice", "lab", 1, int64(3600))
	f.Add("", "", "", "", -1, int64(-5))
	f.Fuzz(func(t *testing.T, name, tenant, holder, release string, devices int, seconds int64) {
		start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		period := time.Duration(seconds) * time.Second
		l, err := ops.Lease(name, tenant).Holder(holder).Workload("notebook", release).
			GPUs(hardware.A100_80G, devices).Period(start, period).Build()
		if err != nil {
			return
		}
		end, ok := ops.Expiry(l)
		if !ok || !end.Equal(start.Add(period)) {
			t.Fatalf("expiry %v for a period of %v", end, period)
		}
	})
}

// FuzzAccounting reads arbitrary resources and lifetimes: device-hours are
// never negative and never exceed the devices × the range.
func FuzzAccounting(f *testing.F) {
	f.Add("nvidia.com/gpu", int64(2), "nvidia.com/gpucores", int64(30), int64(-3600), int64(7200))
	f.Add("nvidia.com/mig-3g.40gb", int64(1), "", int64(0), int64(0), int64(0))
	f.Fuzz(func(t *testing.T, name string, n int64, other string, v int64, startOffset, finish int64) {
		from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
		to := from.Add(24 * time.Hour)
		res := corev1.ResourceList{}
		if name != "" {
			res[corev1.ResourceName(name)] = *resource.NewQuantity(n, resource.DecimalSI)
		}
		if other != "" {
			res[corev1.ResourceName(other)] = *resource.NewQuantity(v, resource.DecimalSI)
		}
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "t"},
			Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Limits: res}}}},
			Status: corev1.PodStatus{Phase: corev1.PodSucceeded, StartTime: &metav1.Time{Time: from.Add(time.Duration(startOffset) * time.Second)}}}
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			FinishedAt: metav1.Time{Time: from.Add(time.Duration(finish) * time.Second)}}}}}
		u, err := ops.Accounting([]corev1.Pod{pod}, from, to)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range u.Records {
			if r.DeviceHours < 0 || r.DeviceHours > float64(max(n, v, 1))*24+1e-9 {
				t.Fatalf("%v device-hours from %v", r.DeviceHours, res)
			}
		}
	})
}
