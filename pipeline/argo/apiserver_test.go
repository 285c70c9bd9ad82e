package argo_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/internal/testsupport/testenv"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"
)

// apiServerPipelines are compiled and applied to a real API server with
// Argo's full CRDs, which rejects any field their schema does not know.
func apiServerPipelines(ns string) map[string]cube.Workload {
	hw := pipeline.Container("sft").Image("nvcr.io/nvidia/pytorch:24.08-py3").
		Command("torchrun", "--nproc-per-node=8", "sft.py").
		On(hardware.H100).Accelerators(8).Fabric(hardware.InfiniBand()).SharedMemory("64Gi").
		ImagePullSecret("registry").HostNetwork(true).PVC("models", "/models").
		PodLabel("tier", "gpu").Annotation("owner", "nlp")
	shard := pipeline.Container("shard").Image("busybox").
		Command("sh", "-c", "echo "+pipeline.ItemRef+" > "+pipeline.OutputFile("part")).
		ForEach("a", "b").Parallelism(1).Outputs("part")
	merge := pipeline.Container("merge").Image("busybox").Command("echo", shard.Output("part"))
	job := pipeline.Workload("job", flows.BatchJob("trainer", "sh", "-c", "echo "+pipeline.ParamRef("lr"))).Retry(retry.Policy{Limit: 1}).ActiveDeadline(time.Minute).
		OutputFrom("job", "{.metadata.name}")
	return map[string]cube.Workload{
		"workflow": argo.Workflow(flows.LLMFlowNamed("llm-flow").Namespace(ns)),
		"schedule": argo.CronWorkflow(flows.LLMFlowNamed("llm-nightly").Namespace(ns), "0 2 * * *").Timezone("Asia/Shanghai").
			ConcurrencyPolicy(argo.ReplaceConcurrent).StartingDeadline(time.Minute).KeepHistory(1, 2),
		"hardware": argo.Workflow(pipeline.New("sft-h100").Namespace(ns).Step(hw)),
		"fan-out":  argo.Workflow(pipeline.New("fan").Namespace(ns).Step(shard, merge)),
		"job":      argo.Workflow(pipeline.New("batch").Namespace(ns).Param("lr", "0.1").Step(job).PodGC(pipeline.PodGCOnWorkflowCompletion).TTLAfterFinished(time.Hour)),
		"rbac":     argo.Workflow(flows.LLMFlowNamed("llm-rbac").Namespace(ns)).ExecutorRBAC(),
		"serve":    argo.Workflow(servePipeline(ns, "busybox")).ExecutorRBAC(),
		"rbac-schedule": argo.CronWorkflow(pipeline.New("nightly-rbac").Namespace(ns).Workspace(pipeline.Workspace{Size: "1Gi"}).
			Step(pipeline.Workload("j", flows.BatchJob("j", "ls", pipeline.WorkspaceDir)).ActiveDeadline(time.Hour)), "@daily").ExecutorRBAC(),
	}
}

func TestAPIServerAcceptsCompiledObjects(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	// Each pipeline goes to a namespace of its own: the variants of
	// llmFlow share their training job's ConfigMap, which belongs to the
	// one release that applied it first.
	for name := range apiServerPipelines("") {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			w := apiServerPipelines(ns)[name]
			c := cube.NewFromClient(env.Client, cube.Namespace(ns))
			built, err := w.Objects()
			require.NoError(t, err)
			rel, err := c.Apply(ctx, w)
			require.NoError(t, err, "strict server-side apply")
			require.Len(t, rel.Objects, len(built))

			// What the server stored is what was built: nothing was dropped.
			main := built[len(built)-1]
			stored := &unstructured.Unstructured{}
			stored.SetGroupVersionKind(main.GetObjectKind().GroupVersionKind())
			require.NoError(t, env.Client.Get(ctx, client.ObjectKeyFromObject(main), stored))
			want, err := cube.ToUnstructured(main)
			require.NoError(t, err)
			wantSpec, err := json.Marshal(want.Object["spec"])
			require.NoError(t, err)
			gotSpec, err := json.Marshal(stored.Object["spec"])
			require.NoError(t, err)
			assert.JSONEq(t, string(wantSpec), string(gotSpec))

			// The job a resource template creates is valid on its own.
			var templates []wfv1.Template
			switch o := main.(type) {
			case *wfv1.Workflow:
				templates = o.Spec.Templates
			case *wfv1.CronWorkflow:
				templates = o.Spec.WorkflowSpec.Templates
			}
			for _, tm := range templates {
				if tm.Resource == nil {
					continue
				}
				var content map[string]any
				require.NoError(t, yaml.Unmarshal([]byte(tm.Resource.Manifest), &content))
				job := &unstructured.Unstructured{Object: content}
				job.SetNamespace(ns)
				require.NoError(t, env.CreateStrict(ctx, job), "manifest of template %s", tm.Name)
				assert.NotEmpty(t, job.GetName(), "generateName gave the job a name")
			}
		})
	}
}

func TestAPIServerRejectsUnknownFields(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	wf, err := argo.Workflow(pipeline.New("strict").Namespace(ns).Step(flows.Ctr("s"))).Build()
	require.NoError(t, err)
	u, err := cube.ToUnstructured(wf)
	require.NoError(t, err)
	tmpls, _, _ := unstructured.NestedSlice(u.Object, "spec", "templates")
	tmpls[1].(map[string]any)["bogusField"] = true
	require.NoError(t, unstructured.SetNestedSlice(u.Object, tmpls, "spec", "templates"))
	_, err = cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(t.Context(), cube.Objects(u))
	require.Error(t, err, "the schema is enforced, so the acceptance above means something")
	assert.Contains(t, err.Error(), "bogusField")
}

// markWorkflow writes the status Argo's controller writes. Argo's Workflow
// CRD has no status subresource (its controller updates the whole object),
// so the status goes through a plain update here.
func markWorkflow(ctx context.Context, c client.Client, ref cube.ObjectRef, phase cube.Phase, message string) error {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ref.GroupVersionKind)
	if err := c.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, u); err != nil {
		return err
	}
	if err := cubetest.SetStatus(u, phase, "", message); err != nil {
		return err
	}
	return c.Update(ctx, u)
}

func TestAPIServerWaitWorkflow(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	c := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(argo.Kinds()...))
	for _, final := range []cube.Phase{cube.Succeeded, cube.Failed} {
		t.Run(string(final), func(t *testing.T) {
			p := pipeline.New("wait-" + string(map[cube.Phase]rune{cube.Succeeded: 's', cube.Failed: 'f'}[final])).Step(flows.Ctr("s"))
			rel, err := c.Apply(ctx, argo.Workflow(p))
			require.NoError(t, err)
			require.Len(t, rel.Objects, 1)
			ref := rel.Objects[0]

			progressed := make(chan cube.Status, 8)
			type result struct {
				st  cube.Status
				err error
			}
			done := make(chan result, 1)
			go func() {
				st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(30*time.Second), cube.OnProgress(func(s cube.Status) { progressed <- s }))
				done <- result{st, err}
			}()
			next := func() cube.Status {
				t.Helper()
				select {
				case s := <-progressed:
					return s
				case r := <-done:
					t.Fatalf("Wait ended before the Workflow did: %v, %v", r.st, r.err)
					return cube.Status{}
				}
			}
			first := next()
			assert.Equal(t, cube.InProgress, first.Phase)
			assert.Equal(t, "Pending", first.Objects[0].Reason)
			require.NoError(t, markWorkflow(ctx, env.Client, ref, cube.InProgress, ""))
			running := next()
			assert.Equal(t, "Running", running.Objects[0].Reason)
			require.NoError(t, markWorkflow(ctx, env.Client, ref, final, "child 's' failed"))
			r := <-done
			assert.Equal(t, final, r.st.Phase)
			if final == cube.Failed {
				require.True(t, errors.Is(r.err, cube.ErrFailed), "%v", r.err)
				assert.Equal(t, "child 's' failed", r.st.Objects[0].Message)
			} else {
				require.NoError(t, r.err)
			}
		})
	}
}

// A client not given argo.Kinds() cannot tell where a Workflow stands:
// it reads it Unknown, and Wait refuses at once rather than wait forever.
func TestAPIServerWaitWorkflowNeedsItsKind(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(ctx, argo.Workflow(pipeline.New("unknown").Step(flows.Ctr("s"))))
	require.NoError(t, err)
	st, err := rel.Wait(ctx, cube.Succeeded, cube.Timeout(30*time.Second))
	require.ErrorIs(t, err, cube.ErrNeverReaches)
	assert.Equal(t, cube.Unknown, st.Phase)
	require.Len(t, st.Objects, 1)
	assert.Equal(t, cube.Unknown, st.Objects[0].Phase)
	assert.Equal(t, "NoReader", st.Objects[0].Reason)
}

// The API server's RBAC authorizer answers for the executor's account what
// ExecutorRBAC granted: what Argo's executor does, and nothing else.
func TestAPIServerExecutorRBACAuthorizes(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	_, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(ctx, argo.Workflow(flows.LLMFlowNamed("authz").Namespace(ns)).ExecutorRBAC())
	require.NoError(t, err)
	allowed := func(group, resource, verb string) bool {
		t.Helper()
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:   "system:serviceaccount:" + ns + ":pipeline-runner",
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: ns, Group: group, Resource: resource, Verb: verb,
			},
		}}
		require.NoError(t, env.Client.Create(ctx, review))
		return review.Status.Allowed
	}
	for _, verb := range []string{"create", "patch"} {
		assert.True(t, allowed("argoproj.io", "workflowtaskresults", verb), verb)
	}
	for _, verb := range []string{"create", "get"} {
		assert.True(t, allowed("kubeflow.org", "pytorchjobs", verb), verb)
	}
	for _, verb := range []string{"watch", "list", "patch", "delete"} {
		assert.False(t, allowed("kubeflow.org", "pytorchjobs", verb), "Argo v3.7.6's executor does not %s the job", verb)
	}
	assert.False(t, allowed("argoproj.io", "workflows", "create"), "the executor does not create workflows")
	assert.False(t, allowed("", "secrets", "get"))
	assert.False(t, allowed("kubeflow.org", "tfjobs", "create"), "only the kinds the steps run")
}

// TestAPIServerWaitSeesTheWorkloadsPods applies a pipeline with a workload
// step and creates the pod the job's controller would make from the job's
// pod template (the batch Job controller copies the template's labels onto
// its pods, k8s.io/kubernetes pkg/controller/job): the pipeline's release
// lists it by cube.dev/release and reports its problem, which it missed
// while the job kept its own release label (issue 10, item 15).
func TestAPIServerWaitSeesTheWorkloadsPods(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	p := pipeline.New("trainflow").Namespace(ns).Step(pipeline.Workload("train", flows.BatchJob("trainer", "true")))
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns), cube.Kinds(argo.Kinds()...)).Apply(ctx, argo.Workflow(p))
	require.NoError(t, err)

	wf, err := argo.Workflow(p).Build()
	require.NoError(t, err)
	labels, found, err := unstructured.NestedStringMap(manifestOf(t, wf, "train").Object, "spec", "template", "metadata", "labels")
	require.NoError(t, err)
	require.True(t, found, "the job's pod template has labels")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "trainer-x7k2p", Namespace: ns, Labels: labels},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}}},
	}
	require.NoError(t, env.Client.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "main", Image: "busybox:1.36",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: `Back-off pulling image "busybox:1.36"`}},
	}}}
	require.NoError(t, env.Client.Status().Update(ctx, pod))

	st, err := rel.Status(ctx)
	require.NoError(t, err)
	require.Len(t, st.Pods, 1, "the pipeline's release lists the job's pod")
	assert.Equal(t, "trainer-x7k2p", st.Pods[0].Pod)
	assert.Equal(t, "main", st.Pods[0].Container)
	assert.Equal(t, "ImagePullBackOff", st.Pods[0].Reason)
}

// The serving pipeline's Workflow, RBAC and Service apply strictly to the
// real API server with Argo's CRDs, and the Deployment its serving step
// applies is one the server accepts (strict field validation), as Argo's
// executor would apply it.
func TestAPIServerAcceptsServeStep(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	ctx := t.Context()
	w := argo.Workflow(servePipeline(ns, "busybox")).ExecutorRBAC()
	rel, err := cube.NewFromClient(env.Client, cube.Namespace(ns)).Apply(ctx, w)
	require.NoError(t, err, "strict server-side apply")
	require.NotEmpty(t, rel.Objects)
	wf, err := w.Build()
	require.NoError(t, err)
	tm := template(t, wf, "serve")
	var content map[string]any
	require.NoError(t, yaml.Unmarshal([]byte(tm.Resource.Manifest), &content))
	dep := &unstructured.Unstructured{Object: content}
	require.NoError(t, env.Client.Create(ctx, dep, client.FieldValidation(metav1.FieldValidationStrict)))
	require.Equal(t, ns, dep.GetNamespace(), "the manifest names the pipeline's namespace")
}
