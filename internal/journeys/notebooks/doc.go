// Package notebooks runs a cube notebook on the test cluster with Debian's
// Jupyter Server and culls it as an operator would. It has no non-test
// code.
package notebooks
