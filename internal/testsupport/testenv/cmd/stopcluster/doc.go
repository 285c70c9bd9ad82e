// Command stopcluster stops the test cluster that the tests started, if it
// still runs, and waits until it has removed what its node left on the
// machine. The cluster stops by itself two minutes after its last test
// binary ends; .ci/run calls this so that nothing outlives the run.
//
//	go run ./internal/testsupport/testenv/cmd/stopcluster
package main
