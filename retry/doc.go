// Package retry describes how cube tries a failed thing again: a Policy
// (how many more attempts, how long to wait, how the wait grows, and when to
// give up) that every builder and client of cube takes, and Do, the one loop
// that carries it out in-process.
//
// A pipeline step, a training job, a model download and the cube client all
// take the same value:
//
//	p := retry.Policy{Limit: 3, Backoff: time.Second, Factor: 2, MaxBackoff: time.Minute}
//	step.Retry(p)
//
// The package imports only the standard library.
package retry
