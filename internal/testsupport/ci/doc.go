// Package ci holds the one rule for skipping a test: only for a missing
// machine prerequisite, named, and never under CI, where a missing
// prerequisite is a failure.
package ci
