package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/llm"
	"github.com/cubestudio/cube/pod"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// judge plays the served chat model: it prefers the shorter answer, and
// guesses "right" when both are as long.
func judge(prompt string) string {
	var a, b string
	for _, line := range strings.Split(prompt, "\n") {
		if v, ok := strings.CutPrefix(line, "answer_a: "); ok {
			a = v
		}
		if v, ok := strings.CutPrefix(line, "answer_b: "); ok {
			b = v
		}
	}
	switch {
	case len(a) < len(b):
		return `{"selected": "left", "score": 0.9}`
	case len(b) < len(a):
		return `{"selected": "right", "score": 0.9}`
	}
	return `{"selected": "right", "score": 0.55}`
}

var questions = []struct{ prompt, a, b string }{
	{"What is the capital of France?", "Paris.", "The capital of France is, as many know, the city of Paris."},
	{"2+2?", "It is 4, because two and two make four in base ten.", "4"},
	{"Name a prime.", "7", "9"},
}

func run(ctx context.Context, out io.Writer) error {
	// 1. The deployment: Label Studio with a bundled PostgreSQL, every
	// credential from Secrets.
	studio := label.Studio("labels").Namespace("team-nlp").
		Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).Token(pod.SecretKeyRef{Name: "labels-admin", Key: "token"}).
		Postgres(pod.SecretKeyRef{Name: "labels-db", Key: "password"}, "20Gi", "")
	var yaml strings.Builder
	if err := cube.Render(&yaml, studio); err != nil {
		return err
	}
	fmt.Fprintf(out, "# label studio: %d objects of YAML\n", strings.Count(yaml.String(), "\nkind: ")+1)

	// 2. Stand-ins for Label Studio and the served model.
	ls := labeltest.NewServer("token-from-the-secret")
	defer ls.Close()
	model := labeltest.NewModel("qwen-judge", judge, nil)
	defer model.Close()
	client, err := label.NewClient(ls.URL, label.Token(ls.Token))
	if err != nil {
		return err
	}

	// 3. A project ranking two model answers, and its tasks.
	project, err := client.CreateProject(ctx, "answer preference", "which answer is better?", label.PairwiseRanking())
	if err != nil {
		return err
	}
	var tasks []label.Task
	for _, q := range questions {
		tasks = append(tasks, label.Task{Data: map[string]any{"prompt": q.prompt, "answer_a": q.a, "answer_b": q.b}})
	}
	imported, err := client.ImportTasks(ctx, project.ID, tasks)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "imported %d tasks into project %d\n", imported.TaskCount, project.ID)

	// 4. Auto-label with the served model.
	chat, err := inference.NewClient(model.URL)
	if err != nil {
		return err
	}
	backend, err := label.NewBackend(chat, label.ModelVersion("qwen-judge@1"))
	if err != nil {
		return err
	}
	pre, err := label.Preannotate(ctx, client, project.ID, backend)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pre-annotated %d tasks\n", pre.Predicted)

	// 5. Two annotators review: they keep the model's choice except on
	// the prime, where the model picked "9".
	listed, err := client.ListTasks(ctx, project.ID)
	if err != nil {
		return err
	}
	for _, t := range listed {
		selected := t.Predictions[0].Result[0].Value.Selected
		if t.Text("prompt") == "Name a prime." {
			selected = "left"
		}
		for user := 1; user <= 2; user++ {
			res := []label.Result{{FromName: "preference", ToName: "answer_a", Type: "pairwise", Value: label.Value{Selected: selected}}}
			if _, err := client.CreateAnnotation(ctx, t.ID, label.Annotation{CompletedBy: user, Result: res}); err != nil {
				return err
			}
		}
	}

	// 6. Quality and the export.
	exported, err := client.Export(ctx, project.ID)
	if err != nil {
		return err
	}
	agreement, err := label.Agreement(exported, "preference")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "annotators: %d tasks, Fleiss' kappa %.2f\n", agreement.Items, agreement.Fleiss)
	acc, err := label.Accuracy(exported, "preference")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "model accuracy: %d of %d\n", acc.Correct, acc.Compared)
	// Before the review, the least confident task was the one to review
	// first.
	if queue := label.UncertaintyQueue(listed, 1); len(queue) == 1 {
		fmt.Fprintf(out, "most uncertain: %q\n", queue[0].Text("prompt"))
	}
	pairs, err := label.PreferencePairs(exported, datasets.ShareGPT, label.PairFields{})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "preference pairs: %d\n", pairs.Len())
	if err := pairs.WriteJSON(out); err != nil {
		return err
	}
	dpo := llm.DPO("answers-dpo", "Qwen/Qwen2.5-7B-Instruct").
		AddDataset(pairs.Dataset("answers", "pvc://datasets/answers/pairs.json")).Output("pvc://models/answers-dpo")
	if _, err := dpo.Objects(); err != nil {
		return err
	}
	fmt.Fprintln(out, "llm.DPO accepts the dataset")
	return nil
}
