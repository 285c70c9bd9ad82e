package pipeline_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline/local"
	"github.com/cubestudio/cube/retry"

	"github.com/cubestudio/cube/pipeline"
)

// Build a pipeline: evaluate reads train's output, so it depends on
// train. Package pipeline/argo compiles it to an Argo Workflow and package
// pipeline/local runs it here; DOT and Mermaid draw it.
func Example() {
	train := pipeline.Container("train").Image("python:3.12").
		Command("python", "train.py", "--lr", pipeline.ParamRef("lr"), "--model-file", pipeline.OutputFile("model")).
		Outputs("model").
		Retry(retry.Policy{Limit: 2, Backoff: 30 * time.Second})
	evaluate := pipeline.Container("evaluate").Image("python:3.12").
		Command("python", "eval.py", "--model", train.Output("model"))
	p := pipeline.New("quickstart").Namespace("ml").Param("lr", "3e-4").Step(train, evaluate)
	fmt.Print(p.Mermaid())
	// Output:
	// flowchart LR
	//   s0["train<br/>container"]
	//   s1["evaluate<br/>container"]
	//   s0 --> s1
}

// Fan out over a list, two at a time; the outputs of the items come back as
// a JSON list.
func ExampleStepOptions_ForEach() {
	shard := pipeline.Func("shard", func(ctx context.Context, t *pipeline.Task) error {
		item, _ := t.Item()
		return t.SetOutput("rows", fmt.Sprint(len(item)*100))
	}).ForEach("en", "zh-hans", "ja").Parallelism(2).Outputs("rows")
	total := pipeline.Func("total", func(ctx context.Context, t *pipeline.Task) error {
		fmt.Println("rows per shard:", t.Input("rows"))
		return nil
	}).Input("rows", shard.Output("rows"))
	res, _ := local.Run(context.Background(), pipeline.New("fanout").Step(shard, total), local.Progress(nil))
	defer os.RemoveAll(res.Dir)
	// Output:
	// rows per shard: ["200","700","200"]
}

func ExamplePipeline_DOT() {
	fmt.Print(flows.Diamond().DOT())
	// Output:
	// digraph "llm" {
	//   rankdir=LR;
	//   node [shape=box, style="rounded,filled", fillcolor=white, fontname="Helvetica"];
	//   "prepare" [label="prepare\ncontainer"];
	//   "train" [label="train\ncontainer"];
	//   "evaluate" [label="evaluate\ncontainer"];
	//   "bench" [label="bench\ncontainer, × 2 items"];
	//   "deploy" [label="deploy\ncontainer, when"];
	//   "notify" [label="notify\ncontainer, on exit", style="rounded,filled,dashed"];
	//   "prepare" -> "train";
	//   "train" -> "evaluate";
	//   "train" -> "bench";
	//   "evaluate" -> "deploy";
	//   "bench" -> "deploy";
	// }
}

func ExamplePipeline_Mermaid() {
	fmt.Print(flows.Diamond().Mermaid())
	// Output:
	// flowchart LR
	//   s0["prepare<br/>container"]
	//   s1["train<br/>container"]
	//   s2["evaluate<br/>container"]
	//   s3["bench<br/>container, × 2 items"]
	//   s4["deploy<br/>container, when"]
	//   s5(["notify<br/>container, on exit"])
	//   s0 --> s1
	//   s1 --> s2
	//   s1 --> s3
	//   s2 --> s4
	//   s3 --> s4
}
