package ops_test

import (
	"fmt"
	"strings"
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
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
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
	})
	// The baseline is what a script over kubectl's pod list and the
	// exporter's series does: device-hours by namespace from the requests
	// alone, and a pod idle when its mean utilisation is under 5%.
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			hours := naiveAccounting(pods, from, to)
			idle := 0
			for _, d := range series {
				sum := 0.0
				for _, s := range d.Utilisation {
					sum += s.Value
				}
				if len(d.Utilisation) > 0 && sum/float64(len(d.Utilisation)) < 5 {
					idle++
				}
			}
			if len(hours) == 0 {
				b.Fatal("no device-hours")
			}
		}
	})
}

// naiveAccounting sums, per namespace, every requested resource whose name
// says gpu or npu times the hours the pod ran inside [from, to): no
// slices, MIG or vNPU shares, no releases or tenants.
func naiveAccounting(pods []corev1.Pod, from, to time.Time) map[string]float64 {
	out := map[string]float64{}
	for i := range pods {
		p := &pods[i]
		if p.Status.StartTime == nil {
			continue
		}
		start, end := p.Status.StartTime.Time, to
		if start.Before(from) {
			start = from
		}
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.Time.Before(end) {
				end = t.FinishedAt.Time
			}
		}
		if !end.After(start) {
			continue
		}
		for _, c := range p.Spec.Containers {
			for name, q := range c.Resources.Requests {
				if strings.Contains(string(name), "gpu") || strings.Contains(string(name), "npu") || strings.Contains(string(name), "Ascend") {
					out[p.Namespace] += q.AsApproximateFloat64() * end.Sub(start).Hours()
				}
			}
		}
	}
	return out
}

func BenchmarkAccounting30Days10kPods(b *testing.B) {
	pods, _ := fleet(b, 10_000)
	b.Run("cube", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ops.Accounting(pods, t0, t0.Add(30*24*time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(naiveAccounting(pods, t0, t0.Add(30*24*time.Hour))) == 0 {
				b.Fatal("no device-hours")
			}
		}
	})
}
