package ops_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/vgpu"
)

// fleet is n pods over 30 days: whole H100s, HAMi slices, MIG instances
// and vNPUs across 50 tenants, with hourly utilisation samples.
func fleet(b *testing.B, n int) ([]corev1.Pod, []ops.DeviceSeries) {
	a100 := hardware.A100_80G
	shapes := []func(i int) corev1.Pod{
		func(i int) corev1.Pod {
			return renderedPod(b, "", "", "vllm", hardware.H100, 1+i%4, nil, t0.Add(time.Duration(i%600)*time.Hour), 0)
		},
		func(i int) corev1.Pod {
			return renderedPod(b, "", "", "notebook", a100, 0, vgpu.Slice(a100).Memory("10Gi").Cores(25), t0.Add(time.Duration(i%700)*time.Hour), 5*time.Hour)
		},
		func(i int) corev1.Pod {
			return renderedPod(b, "", "", "pytorchjob", a100, 0, vgpu.MIG(a100, "3g.40gb"), t0, time.Duration(1+i%700)*time.Hour)
		},
		func(i int) corev1.Pod {
			return renderedPod(b, "", "", "mindie", hardware.Ascend910B3, 0, vgpu.VNPU(hardware.Ascend910B3, "vir05_1c_16g"), t0, 0)
		},
	}
	pods := make([]corev1.Pod, n)
	series := make([]ops.DeviceSeries, n)
	for i := range pods {
		p := shapes[i%len(shapes)](i)
		p.Namespace = fmt.Sprintf("team-%02d", i%50)
		p.Name = fmt.Sprintf("pod-%05d", i)
		p.Labels["cube.dev/release"] = fmt.Sprintf("rel-%04d", i/3)
		pods[i] = p
		samples := make([]ops.Sample, 30*24)
		for h := range samples {
			samples[h] = ops.Sample{At: t0.Add(time.Duration(h) * time.Hour), Value: float64((i + h) % 30)}
		}
		series[i] = ops.DeviceSeries{Exporter: "dcgm", Namespace: p.Namespace, Pod: p.Name, Device: "GPU", Utilisation: samples}
	}
	return pods, series
}

// BenchmarkReports30Days10kPods is the usage report, a tenant statement and
// the idle report for 10,000 pods over 30 days (720 hourly samples each).
func BenchmarkReports30Days10kPods(b *testing.B) {
	pods, series := fleet(b, 10_000)
	from, to := t0, t0.Add(30*24*time.Hour)
	prices := ops.PriceTable{"H100-SXM-80GB": 20, "A100-SXM-80GB": 12, "Ascend910B3": 8}
	serving := ops.ServingIdle()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		u, err := ops.Accounting(pods, from, to)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ops.NewStatement(u, "team-07", prices, "CNY"); err != nil {
			b.Fatal(err)
		}
		if _, err := ops.Idle(series, pods, to, serving, ops.NotebookIdle()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAccounting30Days10kPods(b *testing.B) {
	pods, _ := fleet(b, 10_000)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := ops.Accounting(pods, t0, t0.Add(30*24*time.Hour)); err != nil {
			b.Fatal(err)
		}
	}
}
