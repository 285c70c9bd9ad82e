package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	kubeflowv1 "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/serve/servetest"
)

const ns = "team-support"

// lmEvalResults is what the evaluation pod reports in its termination
// message: lm-evaluation-harness's results, reduced.
func lmEvalResults(mmlu float64) string {
	return fmt.Sprintf(`{"results": {"mmlu": {"acc,none": %v, "acc_stderr,none": 0.004}, "gsm8k": {"exact_match,strict-match": 0.61}}}`, mmlu)
}

// fixture is the platform of one test: an in-memory cluster whose
// controllers react as the recipe's releases are applied, a stand-in Label
// Studio with a rated project, a registry in the cluster's ConfigMaps, and
// an OpenAI-compatible stand-in for the served adapter.
type fixture struct {
	cluster  *cubetest.Cluster
	platform Platform
	model    *servetest.Server
	logs     []string
	mu       sync.Mutex
}

// newFixture plays the cluster the recipe runs on: the fine-tune's
// PyTorchJob and the evaluation Job succeed, the staging and production
// servers become Ready, and the evaluation pod reports mmlu.
func newFixture(t *testing.T, mmlu float64) *fixture {
	t.Helper()
	ctx := t.Context()
	f := &fixture{}
	f.cluster = cubetest.NewCluster(nil, cube.Namespace(ns))
	require.NoError(t, f.cluster.React(cubetest.Kind("PyTorchJob"), cubetest.After(40*time.Minute, cubetest.Succeed())))
	require.NoError(t, f.cluster.React(cubetest.Release(staging), cubetest.After(3*time.Minute, cubetest.Ready())))
	require.NoError(t, f.cluster.React(cubetest.Kind("Job"), cubetest.After(20*time.Minute, cubetest.Succeed())))
	require.NoError(t, f.cluster.React(cubetest.Release(production), cubetest.After(3*time.Minute, cubetest.Ready())))
	t.Cleanup(func() { assert.NoError(t, f.cluster.Err()) })
	// The evaluation Job's pod, as its controller and the kubelet leave it:
	// its evaluate container's termination message holds the harness's
	// results, which market.RecordEvaluation reads. Reactions write the
	// statuses of the objects cube applies, not the pods a Job's
	// controller creates, so the test writes this one pod itself; nothing
	// reads it before the Job has succeeded.
	require.NoError(t, f.evaluationPod(ctx, "eval-support-bot-v1", lmEvalResults(mmlu)))

	// The labeling project: agents rated the answers a model drafted.
	studio := labeltest.NewServer("token-from-the-secret")
	t.Cleanup(studio.Close)
	labels, err := label.NewClient(studio.URL, label.Token(studio.Token))
	require.NoError(t, err)
	project, err := labels.CreateProject(ctx, "support answers", "rate the drafted answer; rewrite it if it is wrong", label.ResponseRating(5))
	require.NoError(t, err)
	rated := []struct {
		prompt, response string
		stars            int
		correction       string
	}{
		{"Can I return opened shampoo?", "Opened personal-care items cannot be refunded, but a faulty one can be exchanged within 30 days.", 5, ""},
		{"Where is my parcel?", "Parcels never have tracking.", 1, "Every parcel gets a tracking number by email once it leaves the warehouse."},
		{"Do you ship abroad?", "Maybe.", 2, ""}, // poor and not rewritten: left out
	}
	var tasks []label.Task
	for _, r := range rated {
		tasks = append(tasks, label.Task{Data: map[string]any{"prompt": r.prompt, "response": r.response}})
	}
	_, err = labels.ImportTasks(ctx, project.ID, tasks)
	require.NoError(t, err)
	listed, err := labels.ListTasks(ctx, project.ID)
	require.NoError(t, err)
	require.Len(t, listed, len(rated))
	for i, task := range listed {
		res := []label.Result{{FromName: "rating", ToName: "response", Type: "rating", Value: label.Value{Rating: rated[i].stars}}}
		if rated[i].correction != "" {
			res = append(res, label.Result{FromName: "correction", ToName: "response", Type: "textarea", Value: label.Value{Lines: []string{rated[i].correction}}})
		}
		_, err := labels.CreateAnnotation(ctx, task.ID, label.Annotation{CompletedBy: 1, Result: res})
		require.NoError(t, err)
	}

	// The production server's API, as a port-forward would reach it: vLLM
	// serves the base model and, under the name support-bot, the adapter,
	// which answers from the numbered sources of the prompt.
	f.model = servetest.New(model, servetest.Answer(answerFromSources))
	t.Cleanup(f.model.Close)

	store, err := market.NewKubernetesStore(f.cluster.Fake, ns)
	require.NoError(t, err)
	f.platform = Platform{
		Namespace: ns, Cube: f.cluster.Client, Kube: f.cluster.Fake,
		Labels: labels, Project: project.ID,
		Registry: market.NewRegistry(store),
		Datasets: t.TempDir(), KnowledgeBases: t.TempDir(),
		Endpoint: f.model.URL,
		Wait:     time.Hour,
		Logf: func(format string, args ...any) {
			f.mu.Lock()
			f.logs = append(f.logs, fmt.Sprintf(format, args...))
			f.mu.Unlock()
		},
	}
	return f
}

// answerFromSources plays the fine-tuned model: it answers a refund
// question from the source that gives the refund time, citing it, and
// otherwise says it does not know.
func answerFromSources(prompt string) string {
	numbers := regexp.MustCompile(`(?m)^\[(\d+)\] `).FindAllStringSubmatch(prompt, -1)
	blocks := regexp.MustCompile(`(?m)^\[\d+\] `).Split(prompt, -1)[1:]
	for i, b := range blocks {
		if strings.Contains(b, "5 business days") && strings.Contains(b, "refund") {
			return "A refund reaches the card within 5 business days of the return arriving at the warehouse [" + numbers[i][1] + "]."
		}
	}
	return "I do not know."
}

// evaluationPod writes the evaluation Job's pod as the kubelet leaves it:
// Succeeded, its evaluate container terminated with the harness's results
// as its termination message.
func (f *fixture) evaluationPod(ctx context.Context, job, results string) error {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: job + "-x7k2p", Namespace: ns, Labels: map[string]string{batchv1.JobNameLabel: job}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "evaluate", Image: market.DefaultEvalImage}}, RestartPolicy: corev1.RestartPolicyNever},
	}
	if err := f.cluster.Fake.Create(ctx, p); err != nil {
		return err
	}
	p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "evaluate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", Message: results}},
	}}}
	return f.cluster.Fake.Status().Update(ctx, p)
}

func (f *fixture) run(t *testing.T) (*Outcome, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return Run(ctx, f.platform, "How long does a refund take?")
}

// TestRecipe runs the whole recipe on an in-memory cluster and checks what
// each step left: the dataset on the claim, the fine-tune applied with it,
// the registry's production version and its scores, the staging server
// gone, the adapter in the production server, and the answer citing the
// handbook's refund section.
func TestRecipe(t *testing.T) {
	f := newFixture(t, 0.7412)
	ctx := t.Context()
	out, err := f.run(t)
	require.NoError(t, err, strings.Join(f.logs, "\n"))

	// 1. The labeled data: the 5-star answer and the rewritten one, not the
	// poor answer nobody rewrote, on the datasets claim.
	assert.Equal(t, 2, out.Records.Len())
	assert.Len(t, out.Records.Skipped, 1)
	written, err := os.ReadFile(filepath.Join(f.platform.Datasets, "support", fmt.Sprintf("sft-%d.json", f.platform.Project)))
	require.NoError(t, err)
	assert.JSONEq(t, `[
	  {"instruction": "Can I return opened shampoo?", "input": "", "output": "Opened personal-care items cannot be refunded, but a faulty one can be exchanged within 30 days."},
	  {"instruction": "Where is my parcel?", "input": "", "output": "Every parcel gets a tracking number by email once it leaves the warehouse."}
	]`, string(written))
	assert.Equal(t, fmt.Sprintf("pvc://datasets/support/sft-%d.json", f.platform.Project), out.Dataset.Source)

	// 2. The fine-tune: a PyTorchJob running LLaMA-Factory on that file,
	// writing a LoRA adapter to the models claim.
	var job kubeflowv1.PyTorchJob
	require.NoError(t, f.cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "support-bot-sft-v1"}, &job))
	var configs corev1.ConfigMapList
	require.NoError(t, f.cluster.Fake.List(ctx, &configs, client.InNamespace(ns)))
	var trainYAML, datasetInfo string
	for _, cm := range configs.Items {
		if y, ok := cm.Data["train.yaml"]; ok && strings.HasPrefix(cm.Name, "support-bot-sft-v1") {
			trainYAML, datasetInfo = y, cm.Data["dataset_info.json"]
		}
	}
	assert.Contains(t, trainYAML, "finetuning_type: lora")
	assert.Contains(t, trainYAML, "dataset: support")
	assert.Contains(t, datasetInfo, fmt.Sprintf("support/sft-%d.json", f.platform.Project))

	// 3 and 4. The registry: version 1 is in production with its lineage
	// and the scores the evaluation pod reported.
	prod, err := f.platform.Registry.Get(ctx, "support-bot@production")
	require.NoError(t, err)
	assert.Equal(t, "support-bot@1", prod.Ref())
	assert.Equal(t, out.Version.Ref(), prod.Ref())
	assert.Equal(t, market.FormatLoRA, prod.Artifact.Format)
	assert.Equal(t, "pvc://models/support-bot/v1", prod.Artifact.URI)
	assert.Equal(t, "Qwen/Qwen2.5-7B-Instruct", prod.Lineage.BaseModel)
	assert.Equal(t, []string{out.Dataset.Source}, prod.Lineage.Datasets)
	assert.Equal(t, "support-bot-sft-v1", prod.Lineage.TrainingRelease)
	assert.Equal(t, 0.7412, prod.Metrics["mmlu/acc"])
	assert.Equal(t, 0.61, prod.Metrics["gsm8k/exact_match/strict-match"])
	require.NotEmpty(t, prod.History)
	assert.Equal(t, market.StageProduction, prod.History[len(prod.History)-1].To)

	// The evaluation scored the staging server's endpoint, and the staging
	// server is gone.
	var eval batchv1.Job
	require.NoError(t, f.cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: "eval-support-bot-v1"}, &eval))
	assert.Contains(t, strings.Join(eval.Spec.Template.Spec.Containers[0].Args, " "),
		"model=support-bot,base_url=http://support-bot-staging-api."+ns+":8000/v1/completions")
	err = f.cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: staging}, &appsv1.Deployment{})
	assert.True(t, apierrors.IsNotFound(err), "the staging server is deleted: %v", err)

	// 5. The production server: vLLM on the base weights with the adapter
	// under the registry model's name, labelled with the version.
	var dep appsv1.Deployment
	require.NoError(t, f.cluster.Fake.Get(ctx, client.ObjectKey{Namespace: ns, Name: production}, &dep))
	args := strings.Join(dep.Spec.Template.Spec.Containers[0].Args, " ")
	assert.Contains(t, args, "--enable-lora")
	assert.Contains(t, args, "--lora-modules support-bot="+serve.LoRAPath+"/support-bot")
	// That directory is the adapter the fine-tune wrote: the version's
	// directory of the models claim.
	pod := dep.Spec.Template.Spec
	var adapterMount *corev1.VolumeMount
	for i, m := range pod.Containers[0].VolumeMounts {
		if m.MountPath == serve.LoRAPath+"/support-bot" {
			adapterMount = &pod.Containers[0].VolumeMounts[i]
		}
	}
	require.NotNil(t, adapterMount, "the adapter is mounted: %v", pod.Containers[0].VolumeMounts)
	assert.Equal(t, "support-bot/v1", adapterMount.SubPath)
	claims := map[string]string{}
	for _, v := range pod.Volumes {
		if v.PersistentVolumeClaim != nil {
			claims[v.Name] = v.PersistentVolumeClaim.ClaimName
		}
	}
	assert.Equal(t, "models", claims[adapterMount.Name])
	assert.Equal(t, "1", dep.Labels[market.LabelVersion])
	rels, err := f.cluster.Client.Releases(ctx, ns)
	require.NoError(t, err)
	var names []string
	for _, r := range rels {
		names = append(names, r.Name)
	}
	assert.ElementsMatch(t, []string{"support-bot-sft-v1", "eval-support-bot-v1", production}, names)

	// 6. The answer: written by the served adapter (its name is what the
	// client asked for), citing the handbook's refund section.
	url, err := serve.URL(out.Serving)
	require.NoError(t, err)
	assert.Equal(t, "http://support-bot-api."+ns+":8000", url)
	var chats []servetest.Request
	for _, r := range f.model.Requests() {
		if r.Path == "/v1/chat/completions" {
			chats = append(chats, r)
		}
	}
	require.Len(t, chats, 1)
	assert.Equal(t, model, chats[0].Model, "the adapter answers, not the base model")
	assert.False(t, out.Answer.Extractive)
	assert.Contains(t, out.Answer.Text, "5 business days")
	require.Len(t, out.Answer.Citations, 1)
	c := out.Answer.Citations[0]
	assert.Equal(t, "refunds.md", c.Source)
	assert.Contains(t, c.Section, "How long a refund takes")
	refunds, err := handbook.ReadFile("handbook/refunds.md")
	require.NoError(t, err)
	assert.Contains(t, string(refunds[c.Start:c.End]), "within 5 business days")
	prompts := f.model.Prompts()
	require.Len(t, prompts, 1)
	assert.Contains(t, prompts[0], "Question: How long does a refund take?")
}

// TestRecipeKeepsAPoorCandidateOutOfProduction: below the bar, the
// candidate is registered and scored but not promoted, and no production
// server is applied.
func TestRecipeKeepsAPoorCandidateOutOfProduction(t *testing.T) {
	f := newFixture(t, 0.55)
	ctx := t.Context()
	_, err := f.run(t)
	require.ErrorContains(t, err, "support-bot@1 scored mmlu/acc 0.55, below the bar 0.7: not promoted")

	v, err := f.platform.Registry.Get(ctx, "support-bot@1")
	require.NoError(t, err)
	assert.Equal(t, 0.55, v.Metrics["mmlu/acc"])
	assert.Equal(t, market.StageNone, v.Stage)
	_, err = f.platform.Registry.Get(ctx, "support-bot@production")
	assert.ErrorIs(t, err, market.ErrNotFound)
	_, err = f.cluster.Client.Release(ctx, ns, production)
	assert.Error(t, err, "no production release")
	assert.Empty(t, f.model.Requests())
}
