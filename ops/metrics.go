package ops

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	promapi "github.com/prometheus/client_golang/api"
	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/cubestudio/cube/internal/timebound"
)

// Exporter is one source of accelerator metrics: the metric names it
// exports and the labels that name the pod, container and device.
type Exporter struct {
	Name string
	// Utilisation is a gauge of device busy percent (0–100).
	Utilisation string
	// Memory is a gauge of device memory in use; MemoryScale turns it into
	// bytes.
	Memory      string
	MemoryScale float64
	// Labels naming the pod, its namespace, the container and the device.
	Namespace, Pod, Container, Device string
}

// The exporters Metrics reads by default, at the versions whose source
// their names and labels were read from (ops/testdata/contracts holds the
// facts, each with its file):
//
//   - DCGM: NVIDIA/dcgm-exporter 4.5.3-4.8.2, etc/default-counters.csv
//     (DCGM_FI_DEV_GPU_UTIL in %, DCGM_FI_DEV_FB_USED in MiB); device labels
//     gpu, UUID, pci_bus_id, device, modelName and Hostname from
//     internal/pkg/rendermetrics/render_metrics.go, and pod, namespace,
//     container added by internal/pkg/transformation (const.go:
//     podAttribute, namespaceAttribute, containerAttribute) when the
//     kubelet's pod-resources socket is mounted.
//   - HAMi: Project-HAMi/HAMi v2.10.0 (hardware.HAMiCommit)
//     cmd/vGPUmonitor/metrics.go, hami_container_device_utilization_ratio
//     and hami_vgpu_memory_used_bytes with labels namespace, pod,
//     container, vdevice_index, device_uuid.
//   - HAMiLegacy: the same file's --legacy-metrics names
//     (initLegacyDescriptors) that Cube Studio's Grafana dashboard queries,
//     Device_utilization_desc_of_container and
//     vGPU_device_memory_usage_in_bytes with podnamespace, podname,
//     ctrname, vdeviceid, deviceuuid.
//   - Ascend: Ascend/mind-cluster v26.1.0 component/npu-exporter (module
//     huawei.com/npu-exporter/v6): container_npu_utilization (%,
//     collector/metrics/collector_for_utilization.go) and
//     container_npu_used_memory (MB, collector/metrics/collector_for_npu.go),
//     both with collector/common.CardLabel (metrics_collector.go): id,
//     model_name, vdie_id, pcie_bus_info, namespace, pod_name,
//     container_name (names in collector/common/constants.go). A device is
//     keyed by id, the chip's physical ID: vdie_id is empty whenever the
//     driver does not report the die ID (collector/common/npu_collector.go
//     setVdieID only logs), so keying by it merged every NPU of a
//     container into one series. Ascend vNPUs (310P) have no
//     container_npu_utilization (collector_for_utilization.go
//     updateContainerUtilization skips them); their vnpu_pod_* metrics,
//     labelled v_dev_id, are not read.
//
// Prometheus renames a scraped label that collides with a target label to
// exported_<name> unless the scrape honours labels, and the exporters'
// default charts scrape through a ServiceMonitor whose targets carry the
// exporter's own namespace, pod and container: dcgm-exporter's
// deployment/values.yaml sets serviceMonitor.honorLabels: false, and HAMi's
// charts/hami/templates/device-plugin/servicemonitor.yaml sets no
// honorLabels (false). The queries therefore take the workload's namespace,
// pod and container from exported_* where present (see Exporter.Query).
var (
	DCGM = Exporter{Name: "dcgm", Utilisation: "DCGM_FI_DEV_GPU_UTIL", Memory: "DCGM_FI_DEV_FB_USED", MemoryScale: 1 << 20,
		Namespace: "namespace", Pod: "pod", Container: "container", Device: "UUID"}
	HAMi = Exporter{Name: "hami", Utilisation: "hami_container_device_utilization_ratio", Memory: "hami_vgpu_memory_used_bytes", MemoryScale: 1,
		Namespace: "namespace", Pod: "pod", Container: "container", Device: "device_uuid"}
	HAMiLegacy = Exporter{Name: "hami-legacy", Utilisation: "Device_utilization_desc_of_container", Memory: "vGPU_device_memory_usage_in_bytes", MemoryScale: 1,
		Namespace: "podnamespace", Pod: "podname", Container: "ctrname", Device: "deviceuuid"}
	Ascend = Exporter{Name: "ascend", Utilisation: "container_npu_utilization", Memory: "container_npu_used_memory", MemoryScale: 1 << 20,
		Namespace: "namespace", Pod: "pod_name", Container: "container_name", Device: "id"}
)

// targetLabels are the labels a ServiceMonitor's scrape targets carry that
// an exporter's own labels may collide with (prometheus-operator sets
// namespace, pod and container from the endpoint's pod).
var targetLabels = []string{"namespace", "pod", "container"}

// Query is the PromQL expression Metrics reads metric with: the series of
// metric that name a pod, with the workload's namespace, pod and container
// taken from exported_<label> when Prometheus renamed them (a scrape
// without honor_labels whose targets carry those labels, as the exporters'
// default ServiceMonitors do) and from the exporter's labels otherwise.
func (e Exporter) Query(metric string) string {
	// Only series that name a pod: dcgm-exporter leaves pod empty on
	// devices no pod holds. Under honor_labels false, pod is the
	// exporter's own for those, a pod no release has.
	q := fmt.Sprintf(`%s{%s!=""}`, metric, e.Pod)
	for _, l := range []string{e.Namespace, e.Pod, e.Container} {
		if slices.Contains(targetLabels, l) {
			// "(.+)" leaves the series alone when exported_<l> is absent.
			q = fmt.Sprintf(`label_replace(%s, %q, "$1", %q, "(.+)")`, q, l, "exported_"+l)
		}
	}
	return q
}

// Sample is one value at one time.
type Sample struct {
	At    time.Time
	Value float64
}

// DeviceSeries is the utilisation of one device by one pod's container
// over time, as one exporter saw it.
type DeviceSeries struct {
	Exporter                  string
	Namespace, Pod, Container string
	Device                    string
	Utilisation               []Sample
	MemoryBytes               []Sample
}

// Metrics reads accelerator utilisation from a Prometheus server's HTTP
// API (/api/v1/query_range).
type Metrics struct {
	api       promv1.API
	exporters []Exporter
}

// MetricsOption tunes NewMetrics: Transport, Exporters.
type MetricsOption interface{ applyMetrics(*metricsConfig) }

type metricsOptionFunc func(*metricsConfig)

func (f metricsOptionFunc) applyMetrics(c *metricsConfig) { f(c) }

type metricsConfig struct {
	rt        http.RoundTripper
	exporters []Exporter
}

// Transport sets the transport (authentication, TLS) of requests.
func Transport(rt http.RoundTripper) MetricsOption {
	return metricsOptionFunc(func(c *metricsConfig) { c.rt = rt })
}

// Exporters replaces the exporters read (default DCGM, HAMi, HAMiLegacy,
// Ascend).
func Exporters(e ...Exporter) MetricsOption {
	return metricsOptionFunc(func(c *metricsConfig) { c.exporters = append([]Exporter(nil), e...) })
}

// NewMetrics returns a reader of the Prometheus server at address
// ("http://prometheus.monitoring:9090").
func NewMetrics(address string, opts ...MetricsOption) (*Metrics, error) {
	cfg := metricsConfig{exporters: []Exporter{DCGM, HAMi, HAMiLegacy, Ascend}}
	for _, o := range opts {
		if o != nil {
			o.applyMetrics(&cfg)
		}
	}
	var errs []error
	if address == "" {
		errs = append(errs, errors.New("address: must not be empty"))
	}
	for i, e := range cfg.exporters {
		if e.Utilisation == "" || e.Namespace == "" || e.Pod == "" {
			errs = append(errs, fmt.Errorf("exporters[%d] %q: utilisation metric, namespace and pod labels must be set", i, e.Name))
		}
		if !model.IsValidLegacyMetricName(e.Utilisation) || (e.Memory != "" && !model.IsValidLegacyMetricName(e.Memory)) {
			errs = append(errs, fmt.Errorf("exporters[%d] %q: metric names must be Prometheus metric names", i, e.Name))
		}
		// The labels go into the query text: a name that is no label name
		// would change the query.
		for _, l := range []struct{ field, name string }{{"namespace", e.Namespace}, {"pod", e.Pod}, {"container", e.Container}, {"device", e.Device}} {
			if (l.name != "" || l.field == "device") && !model.LabelName(l.name).IsValidLegacy() {
				errs = append(errs, fmt.Errorf("exporters[%d] %q: %s label %q must be a Prometheus label name (the device label tells a container's devices apart)", i, e.Name, l.field, l.name))
			}
		}
		if e.Memory != "" && !(e.MemoryScale > 0 && !math.IsInf(e.MemoryScale, 0)) {
			errs = append(errs, fmt.Errorf("exporters[%d] %q: memory scale %v must be a positive finite number of bytes per unit", i, e.Name, e.MemoryScale))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("prometheus metrics: %w", err)
	}
	c, err := promapi.NewClient(promapi.Config{Address: address, RoundTripper: cfg.rt})
	if err != nil {
		return nil, fmt.Errorf("prometheus metrics: address: %w", err)
	}
	return &Metrics{api: promv1.NewAPI(c), exporters: cfg.exporters}, nil
}

// Utilisation queries every exporter over [from, to] at step and returns
// one series per exporter, pod, container and device. Series without a pod
// label (devices no pod holds) are left out.
func (m *Metrics) Utilisation(ctx context.Context, from, to time.Time, step time.Duration) ([]DeviceSeries, error) {
	if m == nil || m.api == nil {
		return nil, errors.New("query utilisation: metrics is nil; use NewMetrics")
	}
	errs := []error{timebound.Check("from", from), timebound.Check("to", to)}
	if !to.After(from) {
		errs = append(errs, errors.New("to: must be after from"))
	}
	if step <= 0 {
		errs = append(errs, errors.New("step: must be positive"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("query utilisation: %w", err)
	}
	r := promv1.Range{Start: from, End: to, Step: step}
	var out []DeviceSeries
	for _, e := range m.exporters {
		index := map[string]int{}
		read := func(metric string, scale float64, set func(*DeviceSeries, []Sample)) error {
			if metric == "" {
				return nil
			}
			query := e.Query(metric)
			v, _, err := m.api.QueryRange(ctx, query, r)
			if err != nil {
				return fmt.Errorf("query %s: %w", query, err)
			}
			matrix, ok := v.(model.Matrix)
			if !ok {
				return fmt.Errorf("query %s: want a matrix, got %s", query, v.Type())
			}
			for _, s := range matrix {
				key := string(s.Metric[model.LabelName(e.Namespace)]) + "/" + string(s.Metric[model.LabelName(e.Pod)]) + "/" +
					string(s.Metric[model.LabelName(e.Container)]) + "/" + string(s.Metric[model.LabelName(e.Device)])
				i, ok := index[key]
				if !ok {
					i = len(out)
					index[key] = i
					out = append(out, DeviceSeries{Exporter: e.Name, Namespace: string(s.Metric[model.LabelName(e.Namespace)]),
						Pod: string(s.Metric[model.LabelName(e.Pod)]), Container: string(s.Metric[model.LabelName(e.Container)]),
						Device: string(s.Metric[model.LabelName(e.Device)])})
				}
				samples := make([]Sample, len(s.Values))
				for j, p := range s.Values {
					samples[j] = Sample{At: p.Timestamp.Time().UTC(), Value: float64(p.Value) * scale}
				}
				set(&out[i], samples)
			}
			return nil
		}
		if err := read(e.Utilisation, 1, func(d *DeviceSeries, s []Sample) { d.Utilisation = s }); err != nil {
			return nil, fmt.Errorf("query utilisation: %s: %w", e.Name, err)
		}
		if err := read(e.Memory, e.MemoryScale, func(d *DeviceSeries, s []Sample) { d.MemoryBytes = s }); err != nil {
			return nil, fmt.Errorf("query utilisation: %s: %w", e.Name, err)
		}
	}
	return out, nil
}
