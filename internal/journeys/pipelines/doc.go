// Package pipelines runs cube pipelines on the test cluster's real Argo
// workflow-controller, in a namespace made by cube.Tenant. It has no
// non-test code.
package pipelines
