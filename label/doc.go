// Package label runs labeling on Label Studio from Go: typed labeling
// configurations rendered to Label Studio's XML (Config and its presets),
// a client of Label Studio's REST API (Client: projects, task import,
// predictions, annotations, export, webhooks), the Label Studio server as a
// cube.Workload (Studio), an ML backend that pre-annotates with a model
// behind inference.Client (Backend, an http.Handler speaking Label Studio's ML
// backend protocol, deployed by MLBackend), agreement and accuracy
// (CohenKappa, FleissKappa, Agreement, Accuracy, UncertaintyQueue), and
// export of accepted annotations to the datasets llm trains on (SFT,
// PreferencePairs, KTO).
//
// The pinned version is Label Studio 1.13.1 (DefaultStudioImage) and
// label-studio-ml-backend's protocol (label_studio_ml/api.py). Label
// Studio is a Python service that cannot run inside a Go test: package
// labeltest stands in for its REST API and for an OpenAI-compatible model,
// for this package's tests and for the tests of code that uses it. The ML
// backend itself runs on the test cluster (mlbackend_cluster_test.go), as
// the program label/labeltest/cmd/mlbackend in an MLBackend workload.
//
// # Where the API shapes come from
//
// Label Studio's repository could not be read at tag 1.13.1 (its snapshot
// is larger than the search tools bring, and PyPI's release is out of
// reach here), so each shape was checked against the nearest sources that
// could be read:
//
//   - label-studio-sdk at tag 1.0.5 (2024-08-12, the SDK release nearest
//     1.13.1), whose .mock/definition/*.yml is the API definition
//     generated from Label Studio at that time: paths and methods of
//     projects (list pages {count, next, previous, results} by page and
//     page_size), import, export (exportType or export_type,
//     download_all_tasks), tasks (GET /api/tasks/ pages {tasks, total,
//     total_annotations, total_predictions}), annotations, predictions
//     ({task, result, score, model_version}), webhooks (a plain list; the
//     fields of Webhook), ML backends (POST /api/ml/: project, url, title,
//     is_interactive, auth_method NONE or BASIC_AUTH, basic_auth_user,
//     basic_auth_pass), S3 storages (POST /api/storages/s3/, POST
//     /api/storages/s3/{id}/sync), and the "Authorization: Token <key>"
//     header of every example.
//   - Label Studio's own files as stored by the search tools, one version
//     each, whose dates the store does not give: ml/urls.py (1c0bfd6),
//     tasks/urls.py (087bcd8), io_storages/urls.py (0eb4ade) for the
//     trailing slashes; data_import/api.py (025871c) for the import
//     answer, which writes prediction_count where its schema says
//     predictions_count; data_export/api.py (003482a) for the export's
//     parameters; webhooks/models.py (07aa52f) for the action list,
//     organization-only actions and HEADERS_SCHEMA;
//     core/utils/common.py (001d826) for the error body {id, status_code,
//     version, detail, exc_info, validation_errors}; ml/api_connector.py
//     (0f1d1f0) and ml/models.py (04f08ff), older than 1.13, for what
//     Label Studio sends to /setup and /predict and reads back ({results:
//     [{result, score}]}, model_version from /setup); and
//     core/settings/base.py and projects/models.py (0012445, a 2026
//     version) for the token authentication that later releases keep and
//     the 3 to 50 characters of a project's title (which the SDK 1.0.5's
//     Project states too).
//   - label-studio-ml-backend at bdfc42b (2024-06-19, its last change
//     before 1.13.1) and d02cedf (2026-08-20): label_studio_ml/api.py,
//     model.py, response.py and exceptions.py for /health, /setup,
//     /predict, /webhook, /metrics, TRAIN_EVENTS and basic auth.
//
// Not confirmed at 1.13.1 itself: that its ML backend connection sends
// basic auth from auth_method BASIC_AUTH (the SDK's definition has the
// fields; the api_connector.py read predates them) and that /setup carries
// model_version and extra_params (label_studio_ml reads them). Backend
// answers /health without basic auth, unlike label_studio_ml, so that the
// kubelet's probes reach it; Label Studio sending credentials there is
// still answered.
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
//	pairs, err := label.PreferencePairs(tasks, datasets.ShareGPT)
package label
