// Command finetune-to-rag is a recipe: a support team turns the answers its
// agents rated in Label Studio into a fine-tuned model, checks it, puts it in
// production and answers customers' questions from its handbook through it.
// Every step is a cube package a platform already has; Run in recipe.go is
// the whole recipe, one numbered step after another.
//
//  1. Labeled data. Agents rated the answers a model drafted (1–5 stars,
//     label.ResponseRating) and rewrote the poor ones. label.Client.Export
//     reads the project, label.SFT keeps the rewrites and the answers rated 4
//     or more as Alpaca records, and the recipe writes them to the datasets
//     claim (mounted where the recipe runs) as support/sft-<project>.json.
//  2. Fine-tune. market.Get picks Qwen/Qwen2.5-7B-Instruct from the
//     catalogue, and Entry.FineTune makes the next version of the team's
//     model support-bot: an llm.SFT LoRA run of LLaMA-Factory on those
//     records (a PyTorchJob), writing the adapter to
//     pvc://models/support-bot/v<n>. Once it has succeeded, Register records
//     the version with its lineage: base model, dataset, release, settings.
//  3. Evaluate. Entry.Serve serves the candidate in staging (vLLM on the base
//     weights with the adapter under the name support-bot), Entry.Evaluate
//     runs lm-evaluation-harness against that endpoint, and
//     market.RecordEvaluation writes the scores the evaluation pod reported
//     to the version. The staging server is deleted.
//  4. Promote. Below the bar (mmlu/acc 0.70) the recipe stops and the
//     version stays out of production. Otherwise Registry.Promote moves it to
//     production, archiving the version there before it.
//  5. Serve. The promotion's rollout applies the production release
//     support-bot for the promoted version, autoscaled on its queue; applied
//     again after the next promotion, it rolls to that one.
//  6. Answer. The handbook (bundled here) is ingested into a rag knowledge
//     base, and its answers are written by the served adapter, reached
//     through serve.ClientAt (the release's Service, or -endpoint when the
//     program runs outside the cluster) under the adapter's name, with
//     citations to the chunks they rest on.
//
// The program runs inside the cluster, in a notebook of the team's
// namespace that mounts the datasets claim: it reaches Label Studio and the
// served model at their in-cluster URLs, and keeps the registry in
// ConfigMaps of the namespace (market.NewKubernetesStore).
//
//	go run ./examples/recipes/finetune-to-rag -namespace team-support -project 3
//
// recipe_test.go runs the same Run on cubetest's in-memory cluster, as a
// team would test its own automation: reactions play the controllers (the
// fine-tune and the evaluation succeed, the servers become Ready) on the
// cluster's clock, label/labeltest stands in for Label Studio and
// serve/servetest for the served model's API. It checks the records on the
// claim, the fine-tune applied with them, the production version and its
// scores, the adapter in the serving Deployment, and the answer citing the
// handbook's refund section. A candidate below the bar is kept out of
// production.
package main
