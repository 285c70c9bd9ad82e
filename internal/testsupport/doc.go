// Package testsupport is the root of the module's test-only helpers: the
// real API server and one-node cluster the tests run on (testenv), golden
// files, fuzz corpora and programs, engine contracts, CPU-time measurement
// and the rule for skipping a test. Nothing outside a _test.go file or a
// test command imports anything below it; the module's production
// internal packages (podspec, identity, quantity, urlcheck, timebound,
// yamlenc) live beside it under internal/.
package testsupport
