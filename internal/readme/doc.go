// Package readme holds the code the README quotes, so that the README
// cannot drift from what compiles and runs. Each snippet of README.md that
// follows a `<!-- snippet: NAME -->` line is the region between
// `// snippet: NAME` and `// end snippet` of this package's tests, less its
// indentation; TestREADMEQuotesTheCode holds the two identical, and each
// snippet runs in a test on cubetest's in-memory cluster. The README's two
// commands are checked the same way: the test command is the one .ci/run
// runs.
package readme
