// Command everything prints the phase cube reads for a fresh PyTorchJob
// in a program that imports every package of cube that builds a kind
// (TestStatusDoesNotDependOnImports).
package main
