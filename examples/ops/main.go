package main

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/notebook"
	"github.com/cubestudio/cube/ops"
)

//go:embed testdata/pods.json testdata/prometheus.json
var data embed.FS

// The recorded window: three days.
var (
	from = time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	to   = from.Add(72 * time.Hour)
)

func main() {
	tenant := flag.String("tenant", "team-a", "the tenant to report on")
	svg := flag.String("svg", "", "also write the utilisation picture to this file")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *tenant, *svg); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer, tenant, svgPath string) error {
	pods, err := readPods()
	if err != nil {
		return err
	}

	// 1. Usage: device-hours from the pods' requests and lifetimes.
	usage, err := ops.Accounting(pods, from, to)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "== usage of %s\n", tenant)
	if err := usage.Tenant(tenant).WriteTable(out); err != nil {
		return err
	}

	// 2. Utilisation from (recorded) Prometheus, and what sits idle.
	rt, err := replay()
	if err != nil {
		return err
	}
	metrics, err := ops.NewMetrics("http://prometheus.monitoring:9090", ops.Transport(rt))
	if err != nil {
		return err
	}
	series, err := metrics.Utilisation(ctx, from, to, 30*time.Minute)
	if err != nil {
		return err
	}
	findings, err := ops.Idle(series, pods, to, ops.ServingIdle(), ops.NotebookIdle())
	if err != nil {
		return err
	}
	// Dry run: Act without ops.Execute changes nothing.
	findings, err = ops.Act(ctx, nil, findings)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n== idle at %s (dry run)\n", to.Format(time.RFC3339))
	if err := ops.WriteFindings(out, findings); err != nil {
		return err
	}

	// 3. A lease of the notebook's A100 to alice for two days.
	lease, err := ops.Lease("alice-a100", "team-a").Holder("alice").Workload(notebook.Kind, "lab").
		Accelerators(hardware.A100_80G, 1).Period(from.Add(24*time.Hour), 48*time.Hour).Build()
	if err != nil {
		return err
	}
	expiry, _ := ops.Expiry(lease)
	fmt.Fprintf(out, "\n== lease %s/%s: %s of %s to %s until %s; the enforcer stops notebook %s then\n",
		lease.Namespace, lease.Name, lease.Annotations[ops.AnnotationDevices], lease.Annotations[ops.AnnotationAccelerator],
		*lease.Spec.HolderIdentity, expiry.UTC().Format(time.RFC3339), lease.Annotations[ops.AnnotationWorkloadRelease])

	// 4. The statement of charges.
	prices := ops.PriceTable{"H100-SXM-80GB": 20, "A100-SXM-80GB": 12, "Ascend910B3": 8}
	st, err := ops.NewStatement(usage, tenant, prices, "CNY")
	if err != nil {
		return err
	}
	fmt.Fprintln(out)
	if err := st.WriteTable(out); err != nil {
		return err
	}

	if svgPath != "" {
		var b bytes.Buffer
		if err := ops.WriteUtilisationSVG(&b, series, from, to, 15); err != nil {
			return err
		}
		if err := os.WriteFile(svgPath, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("write %s: %w", svgPath, err)
		}
	}
	return nil
}

func readPods() ([]corev1.Pod, error) {
	b, err := data.ReadFile("testdata/pods.json")
	if err != nil {
		return nil, err
	}
	var list corev1.PodList
	if err := json.Unmarshal(b, &list); err != nil {
		return nil, fmt.Errorf("read pods: %w", err)
	}
	return list.Items, nil
}

// replay answers Prometheus query_range requests from the recording, by
// query.
func replay() (http.RoundTripper, error) {
	b, err := data.ReadFile("testdata/prometheus.json")
	if err != nil {
		return nil, err
	}
	recorded := map[string]json.RawMessage{}
	if err := json.Unmarshal(b, &recorded); err != nil {
		return nil, fmt.Errorf("read recording: %w", err)
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		body, ok := recorded[r.Form.Get("query")]
		status := http.StatusOK
		if !ok {
			status, body = http.StatusBadRequest, json.RawMessage(`{"status":"error","errorType":"bad_data","error":"not recorded"}`)
		}
		return &http.Response{StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(bytes.NewReader(body)), Request: r}, nil
	}), nil
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
