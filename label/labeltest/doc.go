// Package labeltest is an in-memory stand-in for Label Studio's REST API,
// for testing code that uses label.Client without a Label Studio: Label
// Studio is a Python service that cannot run in a Go test. It follows the
// request and response shapes of Label Studio 1.13.1 for the calls
// label.Client makes (label_studio/projects/api.py, tasks/api.py,
// data_import/api.py, data_export/api.py, data_manager/api.py,
// webhooks/api.py, ml/api.py; see package label's documentation for the
// versions they were read at): the same paths, spelled as Label Studio's
// urls.py files write them (any other spelling is a 404 here, where Label
// Studio would append a missing slash itself), the "Authorization: Token"
// header, {count, next, previous, results} pages of projects, {tasks,
// total} pages of tasks, the 201 answers of creations, the fields POST
// /api/ml/ takes (any other is refused) and the error body {"id",
// "status_code", "version", "detail", "exc_info", "validation_errors"}. It
// checks the labeling config only for being XML with a <View> root, as
// Label Studio's parser does first.
//
// Model is a stand-in OpenAI-compatible model for label.Backend, a
// serve/servetest server with the answers a labeling test sets. The
// program in cmd/mlbackend serves label.BackendFromEnv(); the test
// cluster builds it into an image (testenv.Images.LabelBackend).
package labeltest
