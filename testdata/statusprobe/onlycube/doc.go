// Command onlycube prints the phase cube reads for a fresh PyTorchJob in a
// program that imports only cube (TestStatusDoesNotDependOnImports).
package main
