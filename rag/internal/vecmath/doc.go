// Package vecmath holds the vector arithmetic package rag and its embedders
// share.
package vecmath
