package market_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cubestudio/cube/pod"

	batchv1 "k8s.io/api/batch/v1"

	"github.com/cubestudio/cube/market"
	"github.com/cubestudio/cube/models"
)

func ExampleRegistry() {
	dir, _ := os.MkdirTemp("", "registry")
	defer os.RemoveAll(dir)
	store, err := market.OpenFileStore(filepath.Join(dir, "registry.db"))
	if err != nil {
		panic(err)
	}
	reg := market.NewRegistry(store)
	ctx := context.Background()
	for _, lr := range []string{"2e-5", "1e-5"} {
		_, err := reg.Register(ctx, market.Version{
			Model:    "support-bot",
			Artifact: market.Artifact{URI: "pvc://models/support-bot/lr-" + lr, Format: "safetensors", DType: models.BF16},
			Lineage: market.Lineage{
				BaseModel: "Qwen/Qwen2.5-7B-Instruct", Datasets: []string{"pvc://data/tickets.jsonl"},
				Hyperparameters: map[string]string{"learning_rate": lr},
			},
		})
		if err != nil {
			panic(err)
		}
	}
	_, _ = reg.RecordMetrics(ctx, "support-bot@1", map[string]float64{"mmlu/acc": 0.69})
	_, _ = reg.RecordMetrics(ctx, "support-bot@2", map[string]float64{"mmlu/acc": 0.72})
	best, _ := reg.Search(ctx, market.Query{Model: "support-bot", OrderBy: "mmlu/acc", Limit: 1})
	_, _ = reg.Promote(ctx, best[0].Ref(), market.StageProduction, market.Promotion{By: "alice", Reason: "best mmlu"})

	prod, _ := reg.Get(ctx, "support-bot@production")
	fmt.Println(prod.Ref(), prod.Stage, prod.Lineage.Hyperparameters["learning_rate"], prod.Metrics["mmlu/acc"])
	fmt.Println(prod.History[0].From, "->", prod.History[0].To, "by", prod.History[0].By)

	_, err = reg.Change(ctx, "support-bot@2", func(v *market.Version) error {
		v.Artifact.URI = "pvc://models/elsewhere"
		return nil
	})
	fmt.Println(err)
	// Output:
	// support-bot@2 production 1e-5 0.72
	// none -> production by alice
	// update support-bot@2: registered versions are immutable: artifact: Forbidden: a registered version's artifact never changes: register a new version
}

func ExampleDownload() {
	job := market.Download("fetch-qwen", "hf://Qwen/Qwen2.5-7B-Instruct@a09a35458c702b33eeacc393d103063234e8bc28", "models").
		Namespace("ml").HFToken(pod.SecretKeyRef{Name: "hf-token", Key: "token"}).HFEndpoint("https://hf-mirror.com").
		Include("*.json", "*.safetensors", "tokenizer*").CPU("2").Memory("4Gi")
	objs, err := job.Objects()
	if err != nil {
		panic(err)
	}
	j := objs[0].(*batchv1.Job)
	fmt.Println(j.Name, j.Annotations[market.AnnotationTarget])
	fmt.Println(j.Spec.Template.Spec.Containers[0].Args)

	_, err = market.Download("fetch", "hf://Qwen", "").HFToken(pod.SecretKeyRef{Name: "", Key: ""}).Build()
	fmt.Println(err)
	// Output:
	// fetch-qwen pvc://models/Qwen/Qwen2.5-7B-Instruct
	// [hf download Qwen/Qwen2.5-7B-Instruct --local-dir /models/Qwen/Qwen2.5-7B-Instruct --max-workers 8 --revision a09a35458c702b33eeacc393d103063234e8bc28 --include *.json *.safetensors tokenizer*]
	// [spec.hfToken: Required value: secret name and key are required, spec.source: Invalid value: "hf://Qwen": a hub repository is org/name, spec.claim: Required value: the PersistentVolumeClaim the model is written to]
}

func ExampleEvaluate() {
	v := market.Version{Model: "support-bot", Number: 2, Artifact: market.Artifact{URI: "pvc://models/support-bot/v2"}}
	job, err := market.Evaluate("eval-bot", v, "mmlu", "gsm8k").
		Endpoint("http://support-bot-api.ml:8000/v1", "support-bot").FewShot(5).Build()
	if err != nil {
		panic(err)
	}
	fmt.Println(job.Annotations[market.AnnotationVersion])
	fmt.Println(job.Spec.Template.Spec.Containers[0].Args)
	// Output:
	// support-bot@2
	// [lm_eval run --model local-completions --model_args model=support-bot,base_url=http://support-bot-api.ml:8000/v1/completions,num_concurrent=8,max_retries=3,tokenizer=/models/support-bot/v2 --tasks mmlu,gsm8k --batch_size 1 --output_path /results --num_fewshot 5]
}

func ExampleGet() {
	e, err := market.Get(context.Background(), nil, "Qwen/Qwen2.5-7B-Instruct")
	if err != nil {
		panic(err)
	}
	fmt.Println(e.Version.Model, e.Version.Artifact.URI, e.Facts.Layers, e.HasFacts)
	job, err := e.Download("fetch-qwen", "models").Build()
	if err != nil {
		panic(err)
	}
	fmt.Println(job.Annotations[market.AnnotationTarget])
	// Output:
	// qwen2-5-7b-instruct hf://Qwen/Qwen2.5-7B-Instruct 28 true
	// pvc://models/Qwen/Qwen2.5-7B-Instruct
}
