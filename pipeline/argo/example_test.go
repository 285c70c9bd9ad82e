package argo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"
	"github.com/cubestudio/cube/serve"

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
	if err := cube.Render(os.Stdout, argo.Workflow(p)); err != nil {
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
func ExampleWorkflowBuilder_Build() {
	a := pipeline.Container("a").Image("busybox").Command("true")
	b := pipeline.Container("b").Image("busybox").Command("echo", a.Output("model"))
	c := pipeline.Container("c").Image("busybox").Command("true").After(b)
	a.After(c)
	prepare := pipeline.Func("prepare", func(context.Context, *pipeline.Task) error { return nil })
	_, err := argo.Workflow(pipeline.New("broken").Step(a, b, c, pipeline.Container("b"), prepare, pipeline.Container("Bad_Name"))).Build()
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

// A schedule compiles the same pipeline to a CronWorkflow.
func ExampleCronWorkflow() {
	cw, err := argo.CronWorkflow(flows.Diamond().Namespace("ml"), "0 2 * * *").Timezone("Asia/Shanghai").ConcurrencyPolicy(argo.ForbidConcurrent).StartingDeadline(5 * time.Minute).
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
func ExampleWorkflow_workloadStep() {
	job := cube.Objects(&batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "convert"},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox", Command: []string{"echo", pipeline.ParamRef("format")}}},
		}}},
	})
	wf, err := argo.Workflow(pipeline.New("convert").Param("format", "gguf").Step(pipeline.Workload("convert-job", job))).Build()
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
func ExampleWorkflowBuilder_ExecutorRBAC() {
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
	objs, err := argo.Workflow(pipeline.New("etl").Namespace("ml").Step(convert, report).
		ServiceAccount("etl-runner")).ExecutorRBAC().Objects()
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

// A serving step applies the service and completes once it is available:
// the pipeline trains, then serves, and the model keeps serving after the
// run.
func ExampleWorkflow_serve() {
	train := pipeline.Container("train").Image("python:3.12").Command("python", "train.py")
	chat := serve.VLLM("chat", "pvc://models/llama-8b-sft").On(hardware.L4).Accelerators(1)
	p := pipeline.New("train-serve").Namespace("ml").
		Step(train, pipeline.Serve("serve", chat).After(train).ActiveDeadline(20*time.Minute))
	wf, err := argo.Workflow(p).Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	r := wf.Spec.Templates[2].Resource
	fmt.Println(r.Action, r.SetOwnerReference, "|", r.SuccessCondition)
	// Output:
	// create false | status.availableReplicas > 0
}
