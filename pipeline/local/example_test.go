package local_test

import (
	"context"
	"fmt"
	"os"

	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline/local"

	"github.com/cubestudio/cube/pipeline"
)

// Run a pipeline of Go functions in-process: outputs flow into later
// steps' inputs.
func ExampleRun() {
	prepare := pipeline.Func("prepare", func(ctx context.Context, t *pipeline.Task) error {
		return t.SetOutput("rows", "1200")
	}).Outputs("rows")
	train := pipeline.Func("train", func(ctx context.Context, t *pipeline.Task) error {
		return t.SetOutput("loss", fmt.Sprintf("%s rows at lr %s: loss 0.42", t.Input("rows"), t.Param("lr")))
	}).Input("rows", prepare.Output("rows")).Outputs("loss")
	evaluate := pipeline.Func("evaluate", func(ctx context.Context, t *pipeline.Task) error {
		fmt.Println("evaluating:", t.Input("loss"))
		return nil
	}).Input("loss", train.Output("loss"))

	dir, _ := os.MkdirTemp("", "pipeline-example-")
	defer os.RemoveAll(dir)
	p := pipeline.New("quickstart").Param("lr", "3e-4").Step(prepare, train, evaluate)
	res, err := local.Run(context.Background(), p, local.RunDir(dir), local.Progress(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Println(s.Name, s.Phase, s.Outputs)
	}
	// Run again in the same directory: nothing changed, nothing runs.
	res, _ = local.Run(context.Background(), p, local.RunDir(dir), local.Progress(nil))
	fmt.Println(res.Phase, res.Steps[1].Phase)
	// Output:
	// evaluating: 1200 rows at lr 3e-4: loss 0.42
	// prepare Succeeded map[rows:1200]
	// train Succeeded map[loss:1200 rows at lr 3e-4: loss 0.42]
	// evaluate Succeeded map[]
	// Succeeded Cached
}

// Container steps run their command as a local subprocess; the image is
// ignored. A step writes output NAME to $CUBE_OUTPUTS/NAME.
func ExampleRun_commands() {
	count := pipeline.Container("count").Image("busybox").
		Command("sh", "-c", `echo 3 > "$CUBE_OUTPUTS/shards"`).
		Outputs("shards")
	report := pipeline.Container("report").Image("busybox").
		Command("sh", "-c", "echo processed "+count.Output("shards")+" shards of "+pipeline.ParamRef("dataset")+" > "+pipeline.OutputFile("summary")).
		Outputs("summary")
	res, err := local.Run(context.Background(), pipeline.New("local").Param("dataset", "alpaca").Step(count, report), local.Progress(nil), local.SetParam("dataset", "dolly"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(res.Dir)
	s, _ := res.Step("report")
	fmt.Println(s.Outputs["summary"])
	// Output:
	// processed 3 shards of dolly
}

// A finished run draws its graph coloured by step status. After evaluate
// fails no new step starts (Argo's DAGs fail fast), so bench and deploy are
// omitted; the exit handler still runs.
func ExampleResult_DOT() {
	res, _ := local.Run(context.Background(), flows.Diamond(), local.Progress(nil), local.Parallelism(1),
		local.Replace("evaluate", func(context.Context, *pipeline.Task) error { return fmt.Errorf("accuracy too low") }))
	defer os.RemoveAll(res.Dir)
	fmt.Print(res.DOT())
	fmt.Print(res.Mermaid())
	// Output:
	// digraph "llm" {
	//   rankdir=LR;
	//   node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];
	//   "prepare" [label="prepare\ncontainer\nSucceeded", fillcolor="#c8e6c9", color="#2e7d32"];
	//   "train" [label="train\ncontainer\nSucceeded", fillcolor="#c8e6c9", color="#2e7d32"];
	//   "evaluate" [label="evaluate\ncontainer\nFailed", fillcolor="#ffcdd2", color="#c62828"];
	//   "bench" [label="bench\ncontainer, × 2 items\nOmitted", fillcolor="#fff9c4", color="#9e9d24"];
	//   "deploy" [label="deploy\ncontainer, when\nOmitted", fillcolor="#fff9c4", color="#9e9d24"];
	//   "notify" [label="notify\ncontainer, on exit\nSucceeded", fillcolor="#c8e6c9", color="#2e7d32", style="rounded,filled,dashed"];
	//   "prepare" -> "train";
	//   "train" -> "evaluate";
	//   "train" -> "bench";
	//   "evaluate" -> "deploy";
	//   "bench" -> "deploy";
	// }
	// flowchart LR
	//   s0["prepare<br/>container<br/>Succeeded"]
	//   s1["train<br/>container<br/>Succeeded"]
	//   s2["evaluate<br/>container<br/>Failed"]
	//   s3["bench<br/>container, × 2 items<br/>Omitted"]
	//   s4["deploy<br/>container, when<br/>Omitted"]
	//   s5(["notify<br/>container, on exit<br/>Succeeded"])
	//   s0 --> s1
	//   s1 --> s2
	//   s1 --> s3
	//   s2 --> s4
	//   s3 --> s4
	//   classDef succeeded fill:#c8e6c9,stroke:#2e7d32
	//   class s0,s1,s5 succeeded
	//   classDef failed fill:#ffcdd2,stroke:#c62828
	//   class s2 failed
	//   classDef omitted fill:#fff9c4,stroke:#9e9d24
	//   class s3,s4 omitted
}
