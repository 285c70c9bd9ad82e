package ops_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/ops"
)

// scrapeSeries starts Prometheus scraping lines (with targetLabels on the
// target) and returns what Metrics reads once every exporter's series have
// two samples.
func scrapeSeries(t *testing.T, targetLabels map[string]string, want int, lines ...[]string) []ops.DeviceSeries {
	t.Helper()
	prom := startPrometheusWith(t, startExporter(t, lines...), "", targetLabels)
	m, err := ops.NewMetrics(prom)
	require.NoError(t, err)
	var series []ops.DeviceSeries
	require.Eventually(t, func() bool {
		now := time.Now()
		series, err = m.Utilisation(t.Context(), now.Add(-time.Minute), now, 500*time.Millisecond)
		if err != nil || len(series) < want {
			return false
		}
		for _, s := range series {
			if len(s.Utilisation) < 2 || len(s.MemoryBytes) < 2 {
				return false
			}
		}
		return true
	}, 60*time.Second, 200*time.Millisecond, "series not scraped: %v", series)
	return series
}

// ascendChip is one NPU of a container as npu-exporter v26.1.0 writes it
// when the driver reports no die ID (vdie_id empty, as in the exporter's
// collector/testdata/prometheus_metrics).
func ascendChip(id int, ns, pod string, util, memMB float64) []string {
	labels := fmt.Sprintf(`container_name="main",id="%d",model_name="Ascend910B3",namespace="%s",pcie_bus_info="0000:c%d:00.0",pod_name="%s",vdie_id=""`, id, ns, id, pod)
	return []string{
		fmt.Sprintf("container_npu_utilization{%s} %g", labels, util),
		fmt.Sprintf("container_npu_used_memory{%s} %g", labels, memMB),
	}
}

func TestAscendNPUsOfOneContainerAreSeparateSeries(t *testing.T) {
	series := scrapeSeries(t, nil, 2, ascendChip(0, "team", "infer-0", 10, 100), ascendChip(1, "team", "infer-0", 90, 200))
	byDevice := map[string]ops.DeviceSeries{}
	for _, s := range series {
		byDevice[s.Device] = s
	}
	require.Len(t, byDevice, 2, "one series per NPU: %v", series)
	assert.Equal(t, 10.0, byDevice["0"].Utilisation[0].Value)
	assert.Equal(t, 90.0, byDevice["1"].Utilisation[0].Value)
	assert.Equal(t, float64(200<<20), byDevice["1"].MemoryBytes[0].Value)
	assert.Equal(t, "infer-0", byDevice["1"].Pod)
}

// TestUtilisationReadsTheWorkloadUnderServiceMonitorLabels scrapes the way
// the exporters' default charts do: the target carries the exporter pod's
// namespace, pod and container and labels are not honoured, so Prometheus
// renames the workload's to exported_*. Usage stays the workload's.
func TestUtilisationReadsTheWorkloadUnderServiceMonitorLabels(t *testing.T) {
	exporterPod := map[string]string{"namespace": "gpu-operator", "pod": "dcgm-exporter-x7k2p", "container": "exporter"}
	hami := []string{
		`hami_container_device_utilization_ratio{namespace="team",pod="lab-0",container="main",vdevice_index="0",device_uuid="GPU-a100"} 7`,
		`hami_vgpu_memory_used_bytes{namespace="team",pod="lab-0",container="main",vdevice_index="0",device_uuid="GPU-a100"} 1024`,
	}
	series := scrapeSeries(t, exporterPod, 3, dcgm(0, "team", "qwen-0", 3, 1200), hami, ascendChip(0, "team", "npu-0", 40, 16))
	got := map[string]ops.DeviceSeries{}
	for _, s := range series {
		got[s.Exporter] = s
	}
	require.Len(t, series, 3, "%v", series)
	for exporter, pod := range map[string]string{"dcgm": "qwen-0", "hami": "lab-0", "ascend": "npu-0"} {
		s := got[exporter]
		assert.Equal(t, "team", s.Namespace, exporter)
		assert.Equal(t, pod, s.Pod, exporter)
		assert.Equal(t, "main", s.Container, exporter)
	}
	assert.Equal(t, 3.0, got["dcgm"].Utilisation[0].Value)
	assert.Equal(t, 7.0, got["hami"].Utilisation[0].Value)
	assert.Equal(t, 40.0, got["ascend"].Utilisation[0].Value)
}
