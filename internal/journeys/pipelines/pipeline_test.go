package pipelines

import (
	"strings"
	"testing"
	"time"

	"github.com/cubestudio/cube/pipeline/argo"
	"github.com/cubestudio/cube/retry"

	wfv1 "github.com/argoproj/argo-workflows/v3/pkg/apis/workflow/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube/internal/journeys"
	"github.com/cubestudio/cube/pipeline"
	"github.com/cubestudio/cube/tenant"
	"github.com/cubestudio/cube/train"
)

// A pipeline in a team's tenant (quota, LimitRange, Pod Security baseline,
// RBAC, NetworkPolicy) runs to Succeeded on Argo: a container step passes
// parameters and an output file, a fan-out squares each item, a step is
// skipped by When, a step fails once and succeeds on retry, a PyTorchJob
// runs as a workload step under the tenant's pipeline account, a report
// reads the outputs, and the exit handler sees the outcome. The
// NetworkPolicy is applied but not enforced: the bridge CNI here has no
// policy engine.
func TestPipelineInTenant(t *testing.T) {
	c, cl, ns := journeys.NewClient(t)
	team := tenant.New(ns).CPU("8").Memory("16Gi").Pods(40)
	journeys.Apply(t, cl, team)

	sh := func(script string) []string { return []string{"sh", "-c", script} }
	gen := pipeline.Container("gen").Image(c.Images.Busybox).
		Command(sh(`echo "generating for {{params.who}}"; echo 3 > `+pipeline.OutputFile("count")+`; echo '["2","3","4"]' > `+pipeline.OutputFile("items"))...).
		Outputs("count", "items")
	square := pipeline.Container("square").Image(c.Images.Busybox).
		Command(sh(`echo "square of ` + pipeline.ItemRef + ` is $((` + pipeline.ItemRef + ` * ` + pipeline.ItemRef + `))"`)...).
		ForEachIn(gen.Output("items")).Parallelism(2)
	skipped := pipeline.Container("never").Image(c.Images.Busybox).
		Command("sh", "-c", "echo this step must not run; exit 1").
		When(gen.Output("count") + " > 5")
	// {{retries}} is Argo's attempt number inside a retried template.
	flaky := pipeline.Container("flaky").Image(c.Images.Busybox).
		Command(sh(`echo "attempt {{retries}}"; test "{{retries}}" -ge 1`)...).
		Retry(retry.Policy{Limit: 2, Backoff: time.Second})
	job := train.PyTorch("fit").Image(c.Images.Python).
		Command("python3", "-c", `import os; print("fit world", os.environ["WORLD_SIZE"], "rank", os.environ["RANK"], flush=True)`).
		Workers(0).CPU("250m").Memory("512Mi")
	fit := pipeline.Workload("fit", job).After(gen)
	report := pipeline.Container("report").Image(c.Images.Busybox).
		Command(sh(`echo "report: count=`+gen.Output("count")+`"`)...).
		After(square, skipped, flaky, fit)
	exit := pipeline.Container("on-exit").Image(c.Images.Busybox).
		Command(sh(`echo "exit handler: ` + pipeline.PipelineStatus + `"`)...)
	flow := argo.Workflow(pipeline.New("flow").ServiceAccount(tenant.PipelineServiceAccount).
		Kinds(train.Kinds()...).
		Param("who", "team-a").
		Step(gen, square, skipped, flaky, fit, report).
		OnExit(exit))

	require.NoError(t, tenant.Admits(team, flow), "the tenant's Pod Security level admits the pipeline")
	rel := journeys.Apply(t, cl, flow)
	logs := journeys.Succeeds(t, rel)

	assert.Contains(t, logs, "generating for team-a")
	for _, line := range []string{"square of 2 is 4", "square of 3 is 9", "square of 4 is 16"} {
		assert.Contains(t, logs, line)
	}
	assert.NotContains(t, logs, "this step must not run")
	assert.Contains(t, logs, "attempt 0")
	assert.Contains(t, logs, "attempt 1")
	assert.Contains(t, logs, "fit world 1 rank 0", "the workload step's PyTorchJob ran")
	assert.Contains(t, logs, "report: count=3")
	assert.Contains(t, logs, "exit handler: Succeeded")

	var wf wfv1.Workflow
	require.NoError(t, c.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: "flow"}, &wf))
	phases := map[string][]wfv1.NodePhase{}
	for _, n := range wf.Status.Nodes {
		if n.Type == wfv1.NodeTypePod || n.Type == wfv1.NodeTypeSkipped {
			name := n.DisplayName
			if i := strings.IndexAny(name, "(["); i > 0 {
				name = name[:i]
			}
			phases[name] = append(phases[name], n.Phase)
		}
	}
	assert.Equal(t, []wfv1.NodePhase{wfv1.NodeSkipped}, phases["never"], "nodes: %v", phases)
	assert.ElementsMatch(t, []wfv1.NodePhase{wfv1.NodeFailed, wfv1.NodeSucceeded}, phases["flaky"], "one failure, then success on retry")
	assert.Len(t, phases["square"], 3, "one pod per item")
	gens := wf.Status.Nodes.Find(func(n wfv1.NodeStatus) bool { return n.DisplayName == "gen" })
	require.NotNil(t, gens)
	require.NotNil(t, gens.Outputs)
	outputs := map[string]string{}
	for _, p := range gens.Outputs.Parameters {
		outputs[p.Name] = p.Value.String()
	}
	assert.Equal(t, map[string]string{"count": "3", "items": `["2","3","4"]`}, outputs)
}
