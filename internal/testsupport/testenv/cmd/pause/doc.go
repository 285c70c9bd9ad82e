// Command pause is the test cluster's pod sandbox: it holds the pod's
// namespaces, reaps orphaned children, and exits on SIGINT or SIGTERM, as
// the Kubernetes pause image does.
package main
