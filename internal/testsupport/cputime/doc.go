// Package cputime reads the CPU time of the test process, for benchmarks
// and tests on a shared machine: wall time measures the neighbours as
// well, CPU time measures the work.
package cputime
