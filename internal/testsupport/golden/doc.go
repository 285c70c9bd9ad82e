// Package golden compares what a test produced with a file under testdata,
// and rewrites the file when the test runs with -update. Every package's
// golden tests use it, so the flag and the comparison are written once:
//
//	golden.AssertRender(t, "pytorch-h100-ib.golden", job)
//
// and, after a deliberate change, from the package's directory:
//
//	go test ./train -run Golden -args -update
package golden
