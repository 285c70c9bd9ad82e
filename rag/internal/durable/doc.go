// Package durable holds the file-system steps that make a write survive a
// crash of the machine, shared by package rag and its embedded store.
package durable
