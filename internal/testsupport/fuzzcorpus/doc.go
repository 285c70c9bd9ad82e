// Package fuzzcorpus gives a fuzz target's inputs to a normal test, so
// that what a target accepts can be checked against the test API server
// on every go test run: the inputs go test -fuzz saved under
// testdata/fuzz/<target>, and programs from a fixed-seed generator.
//
//	corpus := append(seeds, fuzzcorpus.Bytes(t, "FuzzBuilders")...)
//	corpus = append(corpus, fuzzcorpus.Programs(10, 400, 4, 24)...)
//	fuzzcorpus.StoredAll(t, c, env, ns, corpus, 40, run, nil)
//
// Stored applies one workload and checks the server stored every object
// as rendered; Program and Pick read a fuzz program's bytes; Saved reads
// the typed inputs of a target that takes more than one []byte.
package fuzzcorpus
