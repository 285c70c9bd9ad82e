// Command ops is the operations journey on a recorded data set: a tenant's
// accelerator usage, the idle releases two policies find (as a dry run), a
// lease of an A100 slice and the tenant's statement of charges.
//
// The data set in testdata was recorded by the ops package's
// TestRecordJourney (go test ./ops -run RecordJourney -record-journey): the
// pods of two tenants rendered through cube's hardware and vgpu appliers,
// and the answers a real Prometheus 2.42 gave to the queries ops.Metrics
// sends, after three days of DCGM, HAMi and npu-exporter samples were
// backfilled into its TSDB. The program replays those answers through
// ops.Transport, so it needs no Prometheus and no cluster:
//
//	go run ./examples/ops
//	go run ./examples/ops -tenant team-b -svg utilisation.svg
package main
