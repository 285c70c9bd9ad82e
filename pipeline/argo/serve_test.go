package argo_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/internal/testsupport/flows"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/serve"
)

// servePipeline trains (a container step), then serves the model with
// vLLM: the serving step applies the Deployment and waits until it is
// available.
func servePipeline(ns, image string) *pipeline.Pipeline {
	prepare := pipeline.Container("prepare").Image(image).Command("sh", "-c", "echo ready")
	chat := serve.VLLM("chat", "standin/chat").Namespace(ns).Image(image).On(hardware.T4).Accelerators(1).
		CPU("100m").Memory("128Mi").Replicas(2)
	return pipeline.New("train-serve").Namespace(ns).
		Step(prepare, pipeline.Serve("serve", chat).After(prepare).ActiveDeadline(10*time.Minute))
}

func TestServeStepCompiles(t *testing.T) {
	objs, err := argo.Workflow(servePipeline("ml", "vllm/vllm-openai:v0.8.5")).ExecutorRBAC().Objects()
	require.NoError(t, err)
	wf, err := argo.Workflow(servePipeline("ml", "vllm/vllm-openai:v0.8.5")).Build()
	require.NoError(t, err)

	tm := template(t, wf, "serve")
	require.NotNil(t, tm.Resource)
	assert.Equal(t, "create", tm.Resource.Action, "never over a service of the same name that exists")
	assert.False(t, tm.Resource.SetOwnerReference, "the Workflow does not own the service: it serves after the run")
	assert.Equal(t, "status.availableReplicas > 1", tm.Resource.SuccessCondition, "both replicas available")
	assert.Empty(t, tm.Resource.FailureCondition)
	assert.NotNil(t, tm.ActiveDeadlineSeconds)
	var dep appsv1.Deployment
	require.NoError(t, yaml.Unmarshal([]byte(tm.Resource.Manifest), &dep))
	assert.Equal(t, "Deployment", dep.Kind)
	assert.Equal(t, "chat", dep.Name, "a service keeps its name (no generateName)")
	assert.Empty(t, dep.GenerateName)
	assert.Equal(t, "train-serve", dep.Labels[cube.LabelRelease], "the service joins the pipeline's release")
	assert.Equal(t, "serve", dep.Labels[pipeline.LabelStep])
	assert.Equal(t, "train-serve", dep.Spec.Template.Labels[cube.LabelRelease])
	assert.Equal(t, "train-serve", dep.Spec.Selector.MatchLabels[cube.LabelRelease], "the selector follows the labels")

	tasks := wf.Spec.Templates[0].DAG.Tasks
	require.Len(t, tasks, 2)
	assert.Equal(t, []string{"prepare"}, tasks[1].Dependencies)

	var kinds []string
	var role *rbacv1.Role
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		if r, ok := o.(*rbacv1.Role); ok {
			role = r
		}
	}
	assert.Contains(t, kinds, "Service/chat-api", "the service's Service is applied with the pipeline")
	assert.NotContains(t, kinds, "Deployment/chat", "the Deployment is applied by the step, after prepare")
	require.NotNil(t, role)
	assert.Contains(t, role.Rules, rbacv1.PolicyRule{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"create", "get", "patch"}})
}

func TestServeStepRefusals(t *testing.T) {
	chat := func() *serve.Service {
		return serve.VLLM("chat", "standin/chat").Image("x").On(hardware.T4).Accelerators(1)
	}
	_, err := argo.Workflow(pipeline.New("p").Workspace(pipeline.Workspace{Size: "1Gi"}).Step(
		pipeline.Serve("job", flows.BatchJob("job", "true")),
		pipeline.Serve("out", chat()).Outputs("x"),
		pipeline.Serve("fan", chat()).ForEach("a"),
		pipeline.Serve("none", chat().Replicas(0)),
		pipeline.Serve("nil", nil),
	)).Build()
	flows.RequireErrors(t, err,
		flows.Want(field.ErrorTypeInvalid, "steps[0].workload", "waits for a Deployment or a LeaderWorkerSet"),
		flows.Want(field.ErrorTypeForbidden, "steps[1].outputs", "a serving step has no outputs"),
		flows.Want(field.ErrorTypeForbidden, "steps[2].forEach", "cannot fan out"),
		flows.Want(field.ErrorTypeInvalid, "steps[3].workload.spec.replicas", "it has no replicas"),
		flows.Want(field.ErrorTypeRequired, "steps[4].workload", "workload is nil"),
	)

	// A workload step still refuses a service, and says what to use.
	_, err = argo.Workflow(pipeline.New("p").Step(pipeline.Workload("chat", chat()))).Build()
	flows.RequireErrors(t, err, flows.Want(field.ErrorTypeInvalid, "steps[0].workload", "give it to pipeline.Serve"))
}
