package ops_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
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
