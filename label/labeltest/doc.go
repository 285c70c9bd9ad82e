// Package labeltest is an in-memory stand-in for Label Studio's REST API,
// for testing code that uses label.Client without a Label Studio: Label
// Studio is a Python service that cannot run in a Go test. It follows the
// request and response shapes of Label Studio 1.13.1 for the calls
// label.Client makes (label_studio/projects/api.py, tasks/api.py,
// data_import/api.py, data_export/api.py, data_manager/api.py,
// webhooks/api.py, ml/api.py): the same paths, the "Authorization: Token"
// header, {count, next, previous, results} pages of projects, {tasks,
// total} pages of tasks, the 201 answers of creations and the error body
// {"status_code", "detail", "validation_errors"}. It checks the labeling
// config only for being XML with a <View> root, as Label Studio's parser
// does first.
package labeltest
