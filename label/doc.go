// Package label runs labeling on Label Studio from Go: typed labeling
// configurations rendered to Label Studio's XML (Config and its presets),
// a client of Label Studio's REST API (Client: projects, task import,
// predictions, annotations, export, webhooks), the Label Studio server as a
// cube.Workload (Studio), an ML backend that pre-annotates with a model
// behind serve.Client (Backend, an http.Handler speaking Label Studio's ML
// backend protocol, deployed by MLBackend), agreement and accuracy
// (CohenKappa, FleissKappa, Agreement, Accuracy, UncertaintyQueue), and
// export of accepted annotations to the datasets llm trains on (SFT,
// PreferencePairs, KTO).
//
// The pinned version is Label Studio 1.13.1 (DefaultStudioImage) and
// label-studio-ml-backend's protocol (label_studio_ml/api.py). Label
// Studio is a Python service that cannot run inside a Go test: package
// labeltest stands in for its REST API and for an OpenAI-compatible model,
// for this package's tests and for the tests of code that uses it.
//
// Secrets never appear in what this package renders or prints: the Studio
// and the ML backend take credentials only as Secret references
// (secretKeyRef), and the Client's token is kept out of its errors and
// String.
//
//	cfg := label.PairwiseRanking()
//	project, err := client.CreateProject(ctx, "answers", "which answer is better", cfg)
//	...
//	tasks, err := client.Export(ctx, project.ID)
//	pairs, err := label.PreferencePairs(tasks, llm.ShareGPT)
package label
