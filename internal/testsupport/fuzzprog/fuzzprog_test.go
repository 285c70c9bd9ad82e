package fuzzprog

import "testing"

func TestReaderAndPick(t *testing.T) {
	r := New([]byte{1, 5})
	pool := []string{"a", "b", "c"}
	if got := Pick(r, pool); got != "b" {
		t.Errorf("byte 1 picks %q, want b", got)
	}
	if got := Pick(r, pool); got != "c" {
		t.Errorf("byte 5 picks %q, want c (5 mod 3)", got)
	}
	if !r.Done() || r.Next() != 0 {
		t.Error("an exhausted reader is done and reads 0")
	}
}
