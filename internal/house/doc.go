// Package house holds the module's own rules as tests: which packages a
// package may reach (TestDependencies, with go list -deps), and the one
// vocabulary of CONTRIBUTING.md over every builder's exported method set
// and every exported identifier (TestVocabulary, TestBuilderSurface). It
// has no code of its own.
package house
