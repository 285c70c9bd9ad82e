package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/kinds"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/market"
)

func main() {
	namespace := flag.String("namespace", "team-support", "the team's namespace")
	studio := flag.String("label-studio", "http://labels:8080", "the team's Label Studio (the Service of label.Studio(\"labels\"))")
	tokenEnv := flag.String("label-token-env", "LABEL_STUDIO_TOKEN", "environment variable holding the Label Studio token")
	project := flag.Int("project", 1, "the Label Studio project of rated support answers")
	data := flag.String("datasets", "/mnt/datasets", "where the datasets claim is mounted here")
	kbs := flag.String("knowledge-bases", "/home/jovyan/kbs", "the directory of the team's knowledge bases")
	endpoint := flag.String("endpoint", "", "where the production server answers, when not run in the cluster (a port-forward: http://127.0.0.1:8000)")
	question := flag.String("question", "How long does a refund take?", "the question to answer")
	wait := flag.Duration("wait", 12*time.Hour, "how long to wait for each release")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *namespace, *studio, *tokenEnv, *project, *data, *kbs, *endpoint, *question, *wait); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, ns, studio, tokenEnv string, project int, data, kbs, endpoint, question string, wait time.Duration) error {
	cfg, err := config.GetConfig() // in a notebook: its service account
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	// The fine-tune is a PyTorchJob: the client reads it with its kind.
	c, err := cube.New(cfg, cube.Namespace(ns), cube.Kinds(kinds.All()...))
	if err != nil {
		return err
	}
	kube, err := client.New(cfg, client.Options{Scheme: clientgoscheme.Scheme})
	if err != nil {
		return err
	}
	// The registry lives in ConfigMaps of the team's namespace.
	store, err := market.NewKubernetesStore(kube, ns)
	if err != nil {
		return err
	}
	labels, err := label.NewClient(studio, label.TokenFromEnv(tokenEnv))
	if err != nil {
		return err
	}
	out, err := Run(ctx, Platform{
		Namespace: ns, Cube: c, Kube: kube,
		Labels: labels, Project: project,
		Registry: market.NewRegistry(store),
		Datasets: data, KnowledgeBases: kbs,
		Endpoint: endpoint, Wait: wait, Logf: log.Printf,
	}, question)
	if err != nil {
		return err
	}
	fmt.Printf("Q: %s\nA: %s\n", question, out.Answer.Text)
	for _, c := range out.Answer.Citations {
		fmt.Printf("  [%d] %s — %s (bytes %d-%d)\n", c.N, c.Source, c.Section, c.Start, c.End)
	}
	return nil
}
