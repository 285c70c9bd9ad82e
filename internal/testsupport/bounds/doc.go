// Package bounds holds fuzz tests to time and memory bounds: what a
// parser or loader may spend on hostile input of n bytes.
package bounds
