package ops

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/internal/testsupport/contract"
)

// The parts of the PromQL Exporter.Query renders: vector selectors with
// their label matchers, and label_replace(v, dst, replacement, src, regex)
// around them. prometheus/promql/parser is not a dependency of cube, so the
// test reads these itself and refuses a query with anything else in it, so
// that a new construct cannot slip past unchecked.
var (
	selectorRE     = regexp.MustCompile(`([A-Za-z_:][A-Za-z0-9_:]*)\{([^}]*)\}`)
	matcherRE      = regexp.MustCompile(`\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*,?`)
	labelReplaceRE = regexp.MustCompile(`,\s*"([^"]*)"\s*,\s*"[^"]*"\s*,\s*"([^"]*)"\s*,\s*"[^"]*"\s*\)`)
)

// promUses returns the metric names a query selects and the label names it
// reads (matchers, label_replace's source and destination).
func promUses(t *testing.T, query string) (metrics, labels []string) {
	t.Helper()
	rest := query
	for _, m := range selectorRE.FindAllStringSubmatch(query, -1) {
		metrics = append(metrics, m[1])
		inner := m[2]
		for _, mm := range matcherRE.FindAllStringSubmatch(inner, -1) {
			labels = append(labels, mm[1])
		}
		require.Empty(t, strings.TrimSpace(matcherRE.ReplaceAllString(inner, "")), "unparsed matchers in %s", query)
		rest = strings.Replace(rest, m[0], "", 1)
	}
	for _, m := range labelReplaceRE.FindAllStringSubmatch(query, -1) {
		labels = append(labels, m[1], m[2])
	}
	rest = labelReplaceRE.ReplaceAllString(rest, "")
	rest = strings.ReplaceAll(rest, "label_replace(", "")
	require.Empty(t, strings.TrimSpace(rest), "query %s has parts the test does not read", query)
	require.NotEmpty(t, metrics, "query %s selects no metric", query)
	return metrics, labels
}

// exporterContracts names the contract of each exporter Metrics reads by
// default.
var exporterContracts = map[string]string{
	DCGM.Name:       "testdata/contracts/dcgm-exporter.tsv",
	HAMi.Name:       "testdata/contracts/hami.tsv",
	HAMiLegacy.Name: "testdata/contracts/hami.tsv",
	Ascend.Name:     "testdata/contracts/npu-exporter.tsv",
}

// TestQueriesMatchExporterContracts renders every query Metrics sends for
// the default exporters and checks each metric it selects, each label it
// reads (in the query and, for the pod, namespace, container and device,
// in Go) and the label that keys devices against the exporters' contracts,
// including the rule that a query reading a workload label a default chart
// renames also reads its exported_ name.
func TestQueriesMatchExporterContracts(t *testing.T) {
	defaults, err := NewMetrics("http://prometheus:9090")
	require.NoError(t, err)
	require.Len(t, defaults.exporters, len(exporterContracts), "every default exporter has a contract")
	for _, e := range defaults.exporters {
		file, ok := exporterContracts[e.Name]
		require.True(t, ok, "exporter %s has no contract", e.Name)
		c, err := contract.Load(file)
		require.NoError(t, err)
		for _, metric := range []string{e.Utilisation, e.Memory} {
			query := e.Query(metric)
			metrics, labels := promUses(t, query)
			assert.Equal(t, []string{metric}, metrics, query)
			// Go reads these from the returned series.
			labels = append(labels, e.Namespace, e.Pod, e.Container, e.Device)
			uses := map[string]string{"metric." + metric: "", "device." + metric: e.Device}
			for _, l := range labels {
				key := "label." + metric + "." + l
				if renamed, ok := strings.CutPrefix(l, "exported_"); ok && slices.Contains(targetLabels, renamed) {
					// Prometheus's own renaming of a colliding label
					// (honor_labels false). A contract states it where the
					// exporter's chart makes it happen; elsewhere the
					// contract has no rule for "Prometheus may rename", so
					// the test asks only that the exporter has the label.
					if _, stated := c.Fact(contract.Key, key); !stated {
						_, has := c.Fact(contract.Key, "label."+metric+"."+renamed)
						assert.True(t, has, "%s: %s renames %s, which %s does not export", e.Name, query, renamed, c.Name)
						continue
					}
				}
				uses[key] = ""
			}
			assert.NoError(t, c.CheckKeys(e.Name+" "+query, uses))
		}
	}
}

// TestContractTestCatchesOldKeying checks the contract check on the
// configurations it was written to refuse: Ascend devices keyed by
// vdie_id, and a query that reads pod but not exported_pod.
func TestContractTestCatchesOldKeying(t *testing.T) {
	npu, err := contract.Load("testdata/contracts/npu-exporter.tsv")
	require.NoError(t, err)
	err = npu.CheckKeys("old ascend", map[string]string{"metric.container_npu_utilization": "",
		"label.container_npu_utilization.vdie_id": "", "device.container_npu_utilization": "vdie_id"})
	assert.ErrorContains(t, err, `device.container_npu_utilization="vdie_id" is not one of id`)

	dcgm, err := contract.Load("testdata/contracts/dcgm-exporter.tsv")
	require.NoError(t, err)
	err = dcgm.CheckKeys("old dcgm", map[string]string{"metric.DCGM_FI_DEV_GPU_UTIL": "",
		"label.DCGM_FI_DEV_GPU_UTIL.pod": "", "device.DCGM_FI_DEV_GPU_UTIL": "UUID"})
	assert.ErrorContains(t, err, "label.DCGM_FI_DEV_GPU_UTIL.exported_pod")
}

// TestQueryReadsRenamedLabels pins the rendered queries: the workload's
// labels come from exported_* where Prometheus renamed them, and only
// labels a scrape target can carry are renamed.
func TestQueryReadsRenamedLabels(t *testing.T) {
	assert.Equal(t, `label_replace(label_replace(label_replace(DCGM_FI_DEV_GPU_UTIL{pod!=""}, "namespace", "$1", "exported_namespace", "(.+)"), "pod", "$1", "exported_pod", "(.+)"), "container", "$1", "exported_container", "(.+)")`,
		DCGM.Query(DCGM.Utilisation))
	assert.Equal(t, `label_replace(container_npu_utilization{pod_name!=""}, "namespace", "$1", "exported_namespace", "(.+)")`,
		Ascend.Query(Ascend.Utilisation))
	assert.Equal(t, `Device_utilization_desc_of_container{podname!=""}`, HAMiLegacy.Query(HAMiLegacy.Utilisation))
}
