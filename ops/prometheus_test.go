package ops_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/ci"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
	"github.com/cubestudio/cube/vgpu"
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

var recordJourney = flag.Bool("record-journey", false, "record examples/ops/testdata from a real Prometheus")

// Journey window of examples/ops: three days.
var (
	journeyFrom = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	journeyTo   = journeyFrom.Add(72 * time.Hour)
	journeyStep = 30 * time.Minute
)

// TestRecordJourney makes the data set examples/ops replays: the pods of
// two tenants (rendered through the hardware and vgpu appliers) and the
// answers a real Prometheus gives to the queries ops.Metrics sends, after
// three days of exporter samples are backfilled into its TSDB with
// promtool. With -record-journey it writes them to examples/ops/testdata;
// without, it checks that the recorded data set is still what the
// renderers and Prometheus give.
func TestRecordJourney(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		ci.Skip(t, "promtool (Debian's prometheus package): %v", err)
	}
	a100, h100, b3 := hardware.A100_80G, hardware.H100, hardware.Ascend910B3
	pods := []corev1.Pod{
		renderedPod(t, "team-a", "qwen", "vllm", h100, 2, nil, journeyFrom, 0),
		renderedPod(t, "team-a", "chat", "vllm", h100, 1, nil, journeyFrom.Add(6*time.Hour), 0),
		renderedPod(t, "team-a", "lab", notebook.Kind, a100, 0, vgpu.Slice(a100).Memory("20Gi").Cores(50), journeyFrom.Add(24*time.Hour), 0),
		renderedPod(t, "team-b", "ft", "pytorchjob", a100, 0, vgpu.MIG(a100, "3g.40gb"), journeyFrom.Add(2*time.Hour), 20*time.Hour),
		renderedPod(t, "team-b", "npu", "mindie", b3, 0, vgpu.VNPU(b3, "vir10_3c_32g"), journeyFrom, 0),
	}
	names := []string{"qwen-0", "chat-0", "lab-0", "ft-0", "npu-0"}
	for i := range pods {
		pods[i].Name = names[i]
	}

	var om strings.Builder
	for _, m := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "Device_utilization_desc_of_container",
		"vGPU_device_memory_usage_in_bytes", "container_npu_utilization", "container_npu_used_memory"} {
		fmt.Fprintf(&om, "# TYPE %s gauge\n", m)
		for at := journeyFrom; !at.After(journeyTo); at = at.Add(5 * time.Minute) {
			h := at.Sub(journeyFrom).Hours()
			ts := at.Unix()
			dcgmLine := func(gpu int, pod string, util, mib float64) {
				if (m == "DCGM_FI_DEV_GPU_UTIL") || (m == "DCGM_FI_DEV_FB_USED") {
					v := util
					if m == "DCGM_FI_DEV_FB_USED" {
						v = mib
					}
					fmt.Fprintf(&om, `%s{gpu="%d",UUID="GPU-%08d-7d1e-4c1a-9f00-000000000000",device="nvidia%d",modelName="NVIDIA H100 80GB HBM3",Hostname="gpu-node-1",container="main",namespace="team-a",pod="%s"} %g %d`+"\n",
						m, gpu, gpu, gpu, pod, v, ts)
				}
			}
			dcgmLine(0, "qwen-0", 3+float64(int(h)%4), 30000)
			dcgmLine(1, "qwen-0", 2+float64(int(h)%3), 30000)
			if h >= 6 {
				dcgmLine(2, "chat-0", 55+float64(int(h*7)%30), 52000)
			}
			if h >= 24 {
				util := 20.0
				if h > 70 {
					util = 0
				}
				switch m {
				case "Device_utilization_desc_of_container":
					fmt.Fprintf(&om, `%s{podnamespace="team-a",podname="lab-0",ctrname="main",vdeviceid="0",deviceuuid="GPU-a100-0"} %g %d`+"\n", m, util, ts)
				case "vGPU_device_memory_usage_in_bytes":
					fmt.Fprintf(&om, `%s{podnamespace="team-a",podname="lab-0",ctrname="main",vdeviceid="0",deviceuuid="GPU-a100-0"} %d %d`+"\n", m, 6<<30, ts)
				}
			}
			switch m {
			case "container_npu_utilization":
				fmt.Fprintf(&om, `%s{id="0",namespace="team-b",pod_name="npu-0",container_name="main",model_name="Ascend910B3",vdie_id="vdie-0",pcie_bus_info="0000:c1:00.0"} %g %d`+"\n", m, 35+float64(int(h)%10), ts)
			case "container_npu_used_memory":
				fmt.Fprintf(&om, `%s{id="0",namespace="team-b",pod_name="npu-0",container_name="main",model_name="Ascend910B3",vdie_id="vdie-0",pcie_bus_info="0000:c1:00.0"} 24576 %d`+"\n", m, ts)
			}
		}
	}
	om.WriteString("# EOF\n")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "samples.om"), []byte(om.String()), 0o600))
	out, err := exec.CommandContext(t.Context(), "promtool", "tsdb", "create-blocks-from", "openmetrics",
		filepath.Join(dir, "samples.om"), filepath.Join(dir, "data")).CombinedOutput()
	require.NoError(t, err, "%s", out)

	prom := startPrometheusOn(t, "127.0.0.1:1", filepath.Join(dir, "data"))
	recorded := map[string]json.RawMessage{}
	for _, e := range []ops.Exporter{ops.DCGM, ops.HAMi, ops.HAMiLegacy, ops.Ascend} {
		for _, metric := range []string{e.Utilisation, e.Memory} {
			query := e.Query(metric)
			v := url.Values{"query": {query}, "start": {fmt.Sprint(journeyFrom.Unix())}, "end": {fmt.Sprint(journeyTo.Unix())},
				"step": {fmt.Sprint(journeyStep.Seconds())}}
			resp, err := http.PostForm(prom+"/api/v1/query_range", v)
			require.NoError(t, err)
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
			recorded[query] = body
		}
	}
	podList := corev1.PodList{Items: pods}
	podList.APIVersion, podList.Kind = "v1", "PodList"
	target := filepath.Join("..", "examples", "ops", "testdata")
	for name, v := range map[string]any{"pods.json": podList, "prometheus.json": recorded} {
		b, err := json.MarshalIndent(v, "", " ")
		require.NoError(t, err)
		if *recordJourney {
			require.NoError(t, os.MkdirAll(target, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(target, name), append(b, '\n'), 0o644))
			continue
		}
		stored, err := os.ReadFile(filepath.Join(target, name))
		require.NoError(t, err)
		require.JSONEq(t, string(stored), string(b), "%s is out of date: run go test ./ops -run TestRecordJourney -record-journey", name)
	}
}
