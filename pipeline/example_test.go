package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cubestudio/cube/retry"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/pipeline"
)

// Build a pipeline and compile it to an Argo Workflow: evaluate reads
// train's output, so it depends on train.
func Example() {
	train := pipeline.Container("train").Image("python:3.12").
		Command("python", "train.py", "--lr", pipeline.ParamRef("lr"), "--model-file", pipeline.OutputFile("model")).
		CPU("4").Memory("16Gi").
		Outputs("model").
		Retry(retry.Policy{Limit: 2, Backoff: 30 * time.Second})
	evaluate := pipeline.Container("evaluate").Image("python:3.12").
		Command("python", "eval.py", "--model", train.Output("model"))
	p := pipeline.New("quickstart").Namespace("ml").Param("lr", "3e-4").Step(train, evaluate)
	if err := cube.Render(os.Stdout, p); err != nil {
		fmt.Println(err)
	}
	// Output:
	// apiVersion: argoproj.io/v1alpha1
	// kind: Workflow
	// metadata:
	//   labels:
	//     app.kubernetes.io/managed-by: cube
	//     app.kubernetes.io/name: quickstart
	//     app.kubernetes.io/part-of: quickstart
	//     cube.dev/kind: pipeline
	//     cube.dev/release: quickstart
	//   name: quickstart
	//   namespace: ml
	// spec:
	//   arguments:
	//     parameters:
	//     - name: lr
	//       value: "3e-4"
	//   entrypoint: quickstart
	//   podMetadata:
	//     labels:
	//       app.kubernetes.io/managed-by: cube
	//       app.kubernetes.io/name: quickstart
	//       app.kubernetes.io/part-of: quickstart
	//       cube.dev/kind: pipeline
	//       cube.dev/release: quickstart
	//   templates:
	//   - dag:
	//       tasks:
	//       - arguments: {}
	//         name: train
	//         template: train
	//       - arguments:
	//           parameters:
	//           - name: train_model
	//             value: '{{tasks.train.outputs.parameters.model}}'
	//         dependencies:
	//         - train
	//         name: evaluate
	//         template: evaluate
	//     inputs: {}
	//     metadata: {}
	//     name: quickstart
	//     outputs: {}
	//   - container:
	//       command:
	//       - python
	//       - train.py
	//       - --lr
	//       - '{{workflow.parameters.lr}}'
	//       - --model-file
	//       - /tmp/cube/outputs/model
	//       env:
	//       - name: CUBE_OUTPUTS
	//         value: /tmp/cube/outputs
	//       image: python:3.12
	//       name: main
	//       resources:
	//         limits:
	//           cpu: "4"
	//           memory: 16Gi
	//         requests:
	//           cpu: "4"
	//           memory: 16Gi
	//       volumeMounts:
	//       - mountPath: /tmp/cube/outputs
	//         name: cube-outputs
	//     inputs: {}
	//     metadata:
	//       labels:
	//         cube.dev/step: train
	//     name: train
	//     outputs:
	//       parameters:
	//       - name: model
	//         valueFrom:
	//           path: /tmp/cube/outputs/model
	//     retryStrategy:
	//       backoff:
	//         duration: 30s
	//       limit: 2
	//     volumes:
	//     - emptyDir: {}
	//       name: cube-outputs
	//   - container:
	//       command:
	//       - python
	//       - eval.py
	//       - --model
	//       - '{{inputs.parameters.train_model}}'
	//       image: python:3.12
	//       name: main
	//       resources: {}
	//     inputs:
	//       parameters:
	//       - name: train_model
	//     metadata:
	//       labels:
	//         cube.dev/step: evaluate
	//     name: evaluate
	//     outputs: {}
}

// Every problem is reported at once, with a field path.
func ExamplePipeline_Build_validation() {
	a := pipeline.Container("a").Image("busybox").Command("true")
	b := pipeline.Container("b").Image("busybox").Command("echo", a.Output("model"))
	c := pipeline.Container("c").Image("busybox").Command("true").After(b)
	a.After(c)
	prepare := pipeline.Func("prepare", func(context.Context, *pipeline.Task) error { return nil })
	_, err := pipeline.New("broken").Step(a, b, c, pipeline.Container("b"), prepare, pipeline.Container("Bad_Name")).Build()
	var all utilerrors.Aggregate
	if errors.As(err, &all) {
		for _, e := range all.Errors() {
			fmt.Println(e)
		}
	}
	// Output:
	// steps[3].name: Duplicate value: "b"
	// steps[5].name: Invalid value: "Bad_Name": must consist of letters, digits or '-' and start with a letter (Argo's template name rule)
	// steps[1].command[1]: Invalid value: "{{steps.a.outputs.model}}": step "a" has no output "model" (declared: none)
	// steps: Invalid value: "a → b → c → a": dependency cycle
	// steps[4]: Invalid value: "prepare": a Go function step runs only locally: use a container or workload step to compile the pipeline for Argo
}

// Run a pipeline of Go functions in-process: outputs flow into later
// steps' inputs.
func ExamplePipeline_Run() {
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
	res, err := p.Run(context.Background(), pipeline.RunDir(dir), pipeline.Progress(nil))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range res.Steps {
		fmt.Println(s.Name, s.Phase, s.Outputs)
	}
	// Run again in the same directory: nothing changed, nothing runs.
	res, _ = p.Run(context.Background(), pipeline.RunDir(dir), pipeline.Progress(nil))
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
func ExamplePipeline_Run_commands() {
	count := pipeline.Container("count").Image("busybox").
		Command("sh", "-c", `echo 3 > "$CUBE_OUTPUTS/shards"`).
		Outputs("shards")
	report := pipeline.Container("report").Image("busybox").
		Command("sh", "-c", "echo processed "+count.Output("shards")+" shards of "+pipeline.ParamRef("dataset")+" > "+pipeline.OutputFile("summary")).
		Outputs("summary")
	res, err := pipeline.New("local").Param("dataset", "alpaca").Step(count, report).
		Run(context.Background(), pipeline.Progress(nil), pipeline.SetParam("dataset", "dolly"))
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
	res, _ := pipeline.New("fanout").Step(shard, total).Run(context.Background(), pipeline.Progress(nil))
	defer os.RemoveAll(res.Dir)
	// Output:
	// rows per shard: ["200","700","200"]
}

func diamond() *pipeline.Pipeline {
	prepare := pipeline.Container("prepare").Image("busybox").Command("sh", "-c", "echo /data > "+pipeline.OutputFile("data")).Outputs("data")
	train := pipeline.Container("train").Image("busybox").Command("sh", "-c", "echo "+prepare.Output("data")+"/model > "+pipeline.OutputFile("model")).Outputs("model")
	evaluate := pipeline.Container("evaluate").Image("busybox").Command("echo", train.Output("model"))
	bench := pipeline.Container("bench").Image("busybox").Command("echo", pipeline.ItemRef).ForEach("en", "zh").After(train)
	deploy := pipeline.Container("deploy").Image("busybox").Command("true").After(evaluate, bench).When(pipeline.ParamRef("deploy") + " == yes")
	notify := pipeline.Container("notify").Image("busybox").Command("echo", pipeline.PipelineStatus)
	return pipeline.New("llm").Param("deploy", "no").Step(prepare, train, evaluate, bench, deploy).OnExit(notify)
}

func ExamplePipeline_DOT() {
	fmt.Print(diamond().DOT())
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
	fmt.Print(diamond().Mermaid())
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

// A finished run draws its graph coloured by step status. After evaluate
// fails no new step starts (Argo's DAGs fail fast), so bench and deploy are
// omitted; the exit handler still runs.
func ExampleResult_DOT() {
	res, _ := diamond().Run(context.Background(), pipeline.Progress(nil), pipeline.Parallelism(1),
		pipeline.Replace("evaluate", func(context.Context, *pipeline.Task) error { return fmt.Errorf("accuracy too low") }))
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

// A schedule compiles the same pipeline to a CronWorkflow.
func ExamplePipeline_Schedule() {
	cw, err := diamond().Namespace("ml").
		Schedule("0 2 * * *").Timezone("Asia/Shanghai").ConcurrencyPolicy(pipeline.ForbidConcurrent).StartingDeadline(5 * time.Minute).
		Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(cw.Kind, cw.Namespace+"/"+cw.Name)
	fmt.Println(cw.Spec.Schedules, cw.Spec.Timezone, cw.Spec.ConcurrencyPolicy, *cw.Spec.StartingDeadlineSeconds)
	fmt.Println(cw.Spec.WorkflowSpec.Entrypoint, len(cw.Spec.WorkflowSpec.Templates), "templates, on exit:", cw.Spec.WorkflowSpec.OnExit)
	// Output:
	// CronWorkflow ml/llm
	// [0 2 * * *] Asia/Shanghai Forbid 300
	// llm 7 templates, on exit: notify
}

// A workload step creates a job with an Argo resource template and waits on
// the completion conditions of its kind: a batch/v1 Job's are cube's own
// (cube.CoreKinds); a pipeline that runs a training job is given its kind
// with Kinds(train.Kinds()...).
func ExampleWorkload() {
	job := cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "convert"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"echo", pipeline.ParamRef("format")}}},
		}}},
	})
	wf, err := pipeline.New("convert").Param("format", "gguf").Step(pipeline.Workload("convert-job", job)).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := wf.Spec.Templates[1].Resource
	fmt.Println(r.Action, r.SetOwnerReference, "|", r.SuccessCondition, "|", r.FailureCondition)
	fmt.Print(r.Manifest)
	// Output:
	// create true | status.completionTime | status.conditions.0.type == Failed, status.conditions.1.type == Failed, status.conditions.2.type == Failed, status.conditions.3.type == Failed, status.conditions.4.type == Failed
	// apiVersion: batch/v1
	// kind: Job
	// metadata:
	//   generateName: convert-
	//   labels:
	//     cube.dev/release: convert
	//     cube.dev/step: convert-job
	// spec:
	//   template:
	//     metadata:
	//       labels:
	//         cube.dev/release: convert
	//     spec:
	//       containers:
	//       - command:
	//         - echo
	//         - '{{workflow.parameters.format}}'
	//         image: busybox
	//         name: main
	//         resources: {}
	//       restartPolicy: Never
}

// ExecutorRBAC renders the service account a pipeline runs under and the
// Role Argo's executor needs: task results, and the job kinds its workload
// steps create.
func ExamplePipeline_ExecutorRBAC() {
	job := cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "convert"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"true"}}},
		}}},
	})
	convert := pipeline.Workload("convert", job).OutputFrom("job", "{.metadata.name}")
	report := pipeline.Container("report").Image("busybox").Command("echo", convert.Output("job"))
	objs, err := pipeline.New("etl").Namespace("ml").Step(convert, report).
		ServiceAccount("etl-runner").ExecutorRBAC().Objects()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, o := range objs {
		fmt.Println(o.GetObjectKind().GroupVersionKind().Kind, o.GetName())
	}
	for _, r := range objs[1].(*rbacv1.Role).Rules {
		fmt.Println(r.APIGroups, r.Resources, r.Verbs)
	}
	fmt.Println("runs as:", objs[3].(*wfv1.Workflow).Spec.ServiceAccountName)
	// Output:
	// ServiceAccount etl-runner
	// Role etl-runner
	// RoleBinding etl-runner
	// Workflow etl
	// [argoproj.io] [workflowtaskresults] [create patch]
	// [batch] [jobs] [create get]
	// runs as: etl-runner
}
