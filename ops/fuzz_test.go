package ops_test

import (
	"math"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cubestudio/cube"
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
			Accelerators(hardware.A100_80G, devices).Period(start, period).Build()
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

// FuzzIdle judges one release from arbitrary samples, thresholds, windows,
// clocks and actions: a finding only for a release whose every sample in
// the window is a real utilisation under the threshold, and Act refuses
// any action outside Report, ScaleDown and Stop, never a panic.
func FuzzIdle(f *testing.F) {
	f.Add(3.0, 4.0, 5.0, 15.0, int64(30), int64(1793491200), "scale-down")
	f.Add(math.NaN(), 0.0, 0.0, 15.0, int64(30), int64(1793491200), "stop")
	f.Add(-1.0, 0.0, 0.0, math.NaN(), int64(-5), int64(0), "delete")
	f.Add(0.0, 0.0, math.Inf(1), 100.0, int64(1<<40), int64(253402300799), "")
	f.Fuzz(func(t *testing.T, a, b, c, below float64, minutes, nowUnix int64, action string) {
		now := time.Unix(nowUnix, 0).UTC()
		values := []float64{a, b, c}
		series := ops.DeviceSeries{Namespace: "team", Pod: "p-0", Container: "main", Device: "0"}
		for i, v := range values {
			series.Utilisation = append(series.Utilisation, ops.Sample{At: now.Add(time.Duration(i-2) * time.Minute), Value: v})
		}
		pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "p-0",
			Labels: cube.Identity{Kind: "vllm", Release: "p"}.Labels()}}
		policy := ops.Policy{Name: "fuzz", Below: below, For: time.Duration(minutes) * time.Minute, Action: ops.Action(action)}
		findings, _ := ops.Idle([]ops.DeviceSeries{series}, []corev1.Pod{pod}, now, policy)
		if len(findings) > 0 {
			for _, smp := range series.Utilisation {
				if v := smp.Value; !smp.At.Before(now.Add(-policy.For)) && !(v >= 0 && v < below) {
					t.Fatalf("release judged idle under %v with sample %v: %v", below, v, findings)
				}
			}
		}
		_, err := ops.Act(t.Context(), nil, []ops.Finding{{Action: ops.Action(action), Tenant: "team", Release: "p"}})
		switch ops.Action(action) {
		case "", ops.Report, ops.ScaleDown, ops.Stop:
			if err != nil {
				t.Fatalf("dry run of %q: %v", action, err)
			}
		default:
			if err == nil {
				t.Fatalf("action %q accepted", action)
			}
		}
	})
}

// FuzzLeaseTimes builds leases at arbitrary starts and periods: a lease
// that builds starts and ends between 1970 and 2262.
func FuzzLeaseTimes(f *testing.F) {
	f.Add(int64(1793491200), int64(3600))
	f.Add(int64(-62135596800), int64(3600))
	f.Add(int64(253402300799), int64(60))
	f.Fuzz(func(t *testing.T, startUnix, seconds int64) {
		start := time.Unix(startUnix, 0).UTC()
		l, err := ops.Lease("gpu", "team").Holder("alice").Workload("notebook", "lab").
			Accelerators(hardware.A100_80G, 1).Period(start, time.Duration(seconds)*time.Second).Build()
		if err != nil {
			return
		}
		end, _ := ops.Expiry(l)
		for _, at := range []time.Time{l.Spec.RenewTime.Time, end} {
			if at.Year() < 1970 || at.Year() > 2262 {
				t.Fatalf("lease from %v to %v built", l.Spec.RenewTime, end)
			}
		}
	})
}
