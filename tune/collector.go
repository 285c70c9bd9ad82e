package tune

import (
	"fmt"
	"regexp"
	"slices"

	common "github.com/kubeflow/katib/pkg/apis/controller/common/v1beta1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Collector is how Katib reads a trial's metrics. It is a value: Filter and
// JSON return a modified copy. The zero Collector is StdOut with Katib's
// default format.
type Collector struct {
	kind    common.CollectorKind
	path    string
	json    bool
	formats []string
	custom  *corev1.Container
	dir     bool
}

// StdOut reads "name=value" lines from the primary container's output.
// formats replace Katib's default format: each is a regular expression whose
// first two groups capture a metric's name and value.
func StdOut(formats ...string) Collector {
	return Collector{kind: common.StdOutCollector, formats: slices.Clone(formats)}
}

// File reads metrics from a file the trial writes at path (absolute), as
// text lines (Filter sets their format) or, with JSON, one JSON object a
// line.
func File(path string) Collector { return Collector{kind: common.FileCollector, path: path} }

// TensorFlowEvent reads TensorFlow summary events under dir (absolute).
func TensorFlowEvent(dir string) Collector {
	return Collector{kind: common.TfEventCollector, path: dir, dir: true}
}

// Prometheus is Katib's PrometheusMetric collector kind, which Build
// refuses: Katib v0.19.0 ships no Prometheus metrics collector (its
// cmd/metricscollector/v1beta1 builds the file and tfevent collectors only),
// its default katib-config lists StdOut, File and TensorFlowEvent
// (manifests/v1beta1/installs/katib-standalone/katib-config.yaml), and the
// experiment webhook refuses an auto-injected kind the katib-config has no
// image for (pkg/webhook/v1beta1/experiment/validator/validator.go:491-499,
// AutoInjectMetricsCollectorList in pkg/metricscollector/v1beta1/common).
// Scrape an endpoint with a Custom collector of your own, or have the trial
// print its metrics for StdOut.
//
// Deprecated: Katib v0.19.0 has no Prometheus collector, so an Experiment
// with it never builds; it stays so that a port of a Katib YAML finds why.
func Prometheus(port int, path string) Collector {
	return Collector{kind: common.PrometheusMetricCollector}
}

// Push takes metrics the trial pushes to Katib's DB manager itself (the
// katib SDK's report_metrics).
func Push() Collector { return Collector{kind: common.PushCollector} }

// Custom runs container as the metrics-collector sidecar. Read (optional)
// tells it where the trial writes.
func Custom(container corev1.Container) Collector {
	c := container.DeepCopy()
	return Collector{kind: common.CustomCollector, custom: c}
}

// Filter sets the metric formats of a StdOut or text File collector: each a
// regular expression whose first two groups capture name and value.
func (c Collector) Filter(formats ...string) Collector {
	c.formats = slices.Clone(formats)
	return c
}

// JSON makes a File collector read one JSON object a line.
func (c Collector) JSON() Collector { c.json = true; return c }

// Read sets the file (or, with dir, directory) a Custom collector reads.
func (c Collector) Read(path string, dir bool) Collector { c.path, c.dir = path, dir; return c }

// defaultCollectorKinds are the kinds an Experiment may use on Katib
// v0.19.0's default install: those katib-config has an image for, and Push
// and Custom, which need none (the validator looks up only the
// auto-injected kinds).
var defaultCollectorKinds = []string{string(common.StdOutCollector), string(common.FileCollector),
	string(common.TfEventCollector), string(common.PushCollector), string(common.CustomCollector)}

// twoGroups is Katib's check that a metrics format has two top
// subexpressions (pkg/webhook/v1beta1/experiment/validator).
var twoGroups = regexp.MustCompile(`.*\(.*\).*\(.*\).*`)

func (c Collector) validate(path *field.Path) field.ErrorList {
	var errs field.ErrorList
	src := path.Child("source")
	switch c.kind {
	case "", common.StdOutCollector, common.PushCollector:
	case common.FileCollector:
		if msg := cleanAbsPath(c.path); msg != "" {
			errs = append(errs, field.Invalid(src.Child("fileSystemPath", "path"), c.path, msg))
		}
		if c.json && len(c.formats) > 0 {
			errs = append(errs, field.Invalid(src.Child("filter"), c.formats, "a JSON metrics file takes no filter"))
		}
	case common.TfEventCollector:
		if msg := cleanAbsPath(c.path); msg != "" {
			errs = append(errs, field.Invalid(src.Child("fileSystemPath", "path"), c.path, msg))
		}
	case common.PrometheusMetricCollector:
		errs = append(errs, field.Invalid(path.Child("collector", "kind"), c.kind, fmt.Sprintf(
			"Katib v0.19.0 ships no Prometheus metrics collector and its default katib-config lists none, so the experiment webhook refuses this kind; use one of %q (Custom runs a scraper of your own)",
			defaultCollectorKinds)))
	case common.CustomCollector:
		if c.custom == nil || c.custom.Name == "" || c.custom.Image == "" {
			errs = append(errs, field.Required(path.Child("collector", "customCollector"), "a custom collector needs a container with a name and an image"))
		}
		if msg := cleanAbsPath(c.path); c.path != "" && msg != "" {
			errs = append(errs, field.Invalid(src.Child("fileSystemPath", "path"), c.path, msg))
		}
	}
	if len(c.formats) > 0 && c.kind != common.StdOutCollector && c.kind != common.FileCollector && c.kind != "" {
		errs = append(errs, field.Invalid(src.Child("filter"), c.formats, fmt.Sprintf("the %s collector takes no filter", c.kind)))
	}
	for i, f := range c.formats {
		p := src.Child("filter", "metricsFormat").Index(i)
		if _, err := regexp.Compile(f); err != nil {
			errs = append(errs, field.Invalid(p, f, err.Error()))
		} else if !twoGroups.MatchString(f) {
			errs = append(errs, field.Invalid(p, f, "needs two groups: the metric's name and its value"))
		}
	}
	return errs
}

func (c Collector) katib() *common.MetricsCollectorSpec {
	kind := c.kind
	if kind == "" {
		kind = common.StdOutCollector
	}
	spec := &common.MetricsCollectorSpec{Collector: &common.CollectorSpec{Kind: kind}}
	var source common.SourceSpec
	switch kind {
	case common.FileCollector:
		format := common.TextFormat
		if c.json {
			format = common.JsonFormat
		}
		source.FileSystemPath = &common.FileSystemPath{Path: c.path, Kind: common.FileKind, Format: format}
	case common.TfEventCollector:
		source.FileSystemPath = &common.FileSystemPath{Path: c.path, Kind: common.DirectoryKind}
	case common.CustomCollector:
		spec.Collector.CustomCollector = c.custom.DeepCopy()
		if c.path != "" {
			k := common.FileKind
			if c.dir {
				k = common.DirectoryKind
			}
			source.FileSystemPath = &common.FileSystemPath{Path: c.path, Kind: k}
		}
	}
	if len(c.formats) > 0 {
		source.Filter = &common.FilterSpec{MetricsFormat: slices.Clone(c.formats)}
	}
	if source.FileSystemPath != nil || source.HttpGet != nil || source.Filter != nil {
		spec.Source = &source
	}
	return spec
}
