// Package snapshot prints a value whole — every field, exported or not,
// following pointers — so that a test sees whether a call changed a
// builder anywhere inside it.
package snapshot
