package ops_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/ci"
)

// exporter is the test's stand-in for the node exporters: it serves, in
// the Prometheus text format, the metric names and labels dcgm-exporter,
// HAMi's vGPU monitor (legacy names) and Huawei's npu-exporter use (see
// the Exporter values for the source files), with fixed values per pod.
type exporter struct{ lines []string }

func (e exporter) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_GPU_UTIL gauge")
	fmt.Fprintln(w, "# TYPE DCGM_FI_DEV_FB_USED gauge")
	for _, l := range e.lines {
		fmt.Fprintln(w, l)
	}
}

// dcgm is one GPU's two series as dcgm-exporter writes them when the
// kubelet's pod-resources socket maps the GPU to a pod.
func dcgm(gpu int, ns, pod string, util, fbMiB float64) []string {
	labels := fmt.Sprintf(`gpu="%d",UUID="GPU-0000000%d-0000-0000-0000-000000000000",pci_bus_id="00000000:%02d:00.0",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="node-1",container="main",namespace="%s",pod="%s"`,
		gpu, gpu, gpu+0x10, gpu, ns, pod)
	return []string{
		fmt.Sprintf("DCGM_FI_DEV_GPU_UTIL{%s} %g", labels, util),
		fmt.Sprintf("DCGM_FI_DEV_FB_USED{%s} %g", labels, fbMiB),
	}
}

func hamiLegacy(ns, pod string, util float64, memBytes float64) []string {
	labels := fmt.Sprintf(`podnamespace="%s",podname="%s",ctrname="main",vdeviceid="0",deviceuuid="GPU-a100"`, ns, pod)
	return []string{
		fmt.Sprintf("Device_utilization_desc_of_container{%s} %g", labels, util),
		fmt.Sprintf("vGPU_device_memory_usage_in_bytes{%s} %g", labels, memBytes),
	}
}

func ascend(ns, pod string, util, memMB float64) []string {
	labels := fmt.Sprintf(`id="0",namespace="%s",pod_name="%s",container_name="main",model_name="Ascend910B3",vdie_id="vdie-0",pcie_bus_info="0000:c1:00.0"`, ns, pod)
	return []string{
		fmt.Sprintf("container_npu_utilization{%s} %g", labels, util),
		fmt.Sprintf("container_npu_used_memory{%s} %g", labels, memMB),
	}
}

// startPrometheus runs Debian's prometheus binary on a free loopback port
// with a temporary storage directory, scraping target every 500ms, and
// returns its address once it is ready. It skips when the binary is
// missing, except under CI=true.
func startPrometheus(t *testing.T, target string) string {
	t.Helper()
	return startPrometheusOn(t, target, "")
}

// startPrometheusOn is startPrometheus with a storage directory of the
// caller's (a backfilled TSDB); empty means a fresh temporary one.
func startPrometheusOn(t *testing.T, target, storage string) string {
	t.Helper()
	return startPrometheusWith(t, target, storage, nil)
}

// startPrometheusWith is startPrometheusOn with labels on the scrape target
// and honor_labels left at its default, false: as a ServiceMonitor's target
// carries the exporter pod's own namespace, pod and container.
func startPrometheusWith(t *testing.T, target, storage string, targetLabels map[string]string) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		ci.Skip(t, "the prometheus binary (Debian's prometheus package): %v", err)
	}
	dir := t.TempDir()
	if storage == "" {
		storage = filepath.Join(dir, "data")
	}
	cfg := fmt.Sprintf(`global:
  scrape_interval: 500ms
  scrape_timeout: 400ms
scrape_configs:
  - job_name: accelerators
    static_configs:
      - targets: [%q]
        labels: {%s}
`, target, strings.Join(labelPairs(targetLabels), ", "))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "prometheus.yml"), []byte(cfg), 0o600))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cmd := exec.CommandContext(t.Context(), "nice", "-n", "19", bin,
		"--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+storage,
		"--storage.tsdb.retention.time=100y",
		"--web.listen-address="+addr,
		"--log.level=warn")
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("prometheus log:\n%s", logs.String())
		}
	})
	base := "http://" + addr
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/-/ready")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 100*time.Millisecond, "prometheus did not become ready")
	return base
}

func startExporter(t *testing.T, lines ...[]string) string {
	t.Helper()
	var all []string
	for _, l := range lines {
		all = append(all, l...)
	}
	srv := httptest.NewServer(exporter{lines: all})
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func labelPairs(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s: %q", k, v))
	}
	return out
}
