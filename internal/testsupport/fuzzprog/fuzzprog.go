// Package fuzzprog turns a fuzzer's bytes into a program of builder calls:
// a reader that hands out one byte at a time (zero once they run out) and
// Pick, which draws a value from a pool by the next byte. Every builder
// fuzzer of the module reads its input through it.
package fuzzprog

// Reader hands out the bytes of a fuzz input one at a time.
type Reader struct {
	data []byte
	pos  int
}

// New returns a Reader over data.
func New(data []byte) *Reader { return &Reader{data: data} }

// Next returns the next byte as an int, or 0 when the input is used up.
func (r *Reader) Next() int {
	if r.pos >= len(r.data) {
		return 0
	}
	b := r.data[r.pos]
	r.pos++
	return int(b)
}

// Done reports whether the input is used up.
func (r *Reader) Done() bool { return r.pos >= len(r.data) }

// Pick returns the element of pool the next byte selects.
func Pick[T any](r *Reader, pool []T) T { return pool[r.Next()%len(pool)] }
