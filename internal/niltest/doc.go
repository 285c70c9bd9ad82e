// Package niltest holds one test: every exported method of cube's builders
// and clients, called on a typed nil pointer and on a zero value with zero
// arguments, returns (an error, or nil) instead of panicking or hanging.
// It lives apart from the packages so that one test can import them all.
package niltest
