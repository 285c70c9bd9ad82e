package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// smallLog writes a log of a few writes (single puts, a batch of two, a
// delete, a last put) and returns its bytes and the offset after each
// write (a standalone frame, or a batch's commit), the header first.
func smallLog(t *testing.T) ([]byte, []int) {
	t.Helper()
	dir := t.TempDir()
	s, err := Open(dir, NoSync())
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, s.Upsert(ctx, rec("a", "s", "alpha", 1, 0, 0)))
	require.NoError(t, s.Upsert(ctx, rec("b", "s", "beta", 0, 1, 0), rec("c", "t", "gamma", 0, 0, 1)))
	require.NoError(t, s.Delete(ctx, "a"))
	require.NoError(t, s.Upsert(ctx, rec("d", "t", "delta", 1, 1, 0)))
	require.NoError(t, s.Close())
	good, err := os.ReadFile(filepath.Join(dir, logName))
	require.NoError(t, err)
	// A write is whole after a standalone frame or a batch's commit.
	ends := []int{len(logMagic)}
	for off := len(logMagic); off < len(good); {
		n := int(binary.LittleEndian.Uint32(good[off:]))
		op := good[off+8]
		off += 8 + n
		if op != opPutPart && op != opDeletePart {
			ends = append(ends, off)
		}
	}
	require.Equal(t, len(good), ends[len(ends)-1])
	require.Len(t, ends, 5)
	return good, ends
}

// replayedChunks decodes the whole frames of log up to end, without the
// replay under test, and returns the chunks left, by ID.
func replayedChunks(t *testing.T, log []byte, end int) []Chunk {
	t.Helper()
	live := map[string]Chunk{}
	for off := len(logMagic); off < end; {
		n := int(binary.LittleEndian.Uint32(log[off:]))
		op, err := decodeOp(log[off+8 : off+8+n])
		require.NoError(t, err)
		switch op.op {
		case opPut:
			live[op.record.Chunk.ID] = op.record.Chunk
		case opDelete:
			for _, id := range op.ids {
				delete(live, id)
			}
		}
		off += 8 + n
	}
	var out []Chunk
	for _, c := range live {
		out = append(out, c)
	}
	sortChunks(out)
	return out
}

// Every byte of a small log flipped, cut off after, or deleted: a log that
// is a prefix of the one written (a crash cut it) opens with every whole
// frame and loses only the frame cut short; any other change is
// ErrCorrupt and the file is left as it was, so no frame that was whole
// is ever cut.
func TestOpenTellsATornTailFromDamage(t *testing.T) {
	good, ends := smallLog(t)
	dir := t.TempDir()
	path := filepath.Join(dir, logName)
	cases := 0
	check := func(what string, log []byte) {
		t.Helper()
		cases++
		require.NoError(t, os.WriteFile(path, log, 0o644))
		s, err := Open(dir, NoSync())
		after, rerr := os.ReadFile(path)
		require.NoError(t, rerr)
		if !bytes.HasPrefix(good, log) {
			require.ErrorIs(t, err, ErrCorrupt, "%s: not a prefix of the log written, so damaged", what)
			require.Equal(t, log, after, "%s: a damaged log is left as it was", what)
			return
		}
		require.NoError(t, err, "%s: a cut log opens", what)
		require.NoError(t, s.Close())
		// Every frame whole in the cut log is there; only the one cut short
		// is gone from the file.
		end := len(logMagic)
		for _, e := range ends {
			if e <= len(log) {
				end = e
			}
		}
		require.Equal(t, good[:end], after, "%s: the file keeps every whole frame", what)
		s, err = Open(dir, NoSync())
		require.NoError(t, err)
		got, err := s.List(t.Context(), nil)
		require.NoError(t, err)
		require.NoError(t, s.Close())
		require.Equal(t, replayedChunks(t, good, end), got, "%s", what)
	}
	for n := range len(good) + 1 {
		check(fmt.Sprintf("cut to %d bytes", n), good[:n])
	}
	for i := range good {
		for _, mask := range []byte{0x01, 0x80, 0xFF} {
			b := slices.Clone(good)
			b[i] ^= mask
			check(fmt.Sprintf("byte %d ^ %#x", i, mask), b)
		}
		for _, n := range []int{1, 2, 3} {
			if i+n <= len(good) {
				check(fmt.Sprintf("bytes %d to %d deleted", i, i+n), slices.Concat(good[:i], good[i+n:]))
			}
		}
	}
	t.Logf("%d logs of %d frames, %d bytes", cases, len(ends)-1, len(good))

	// The damage that once lost everything: two bytes of the first frame's
	// length flipped, so that it runs past the end of the log.
	b := slices.Clone(good)
	b[len(logMagic)+1] ^= 0xFF
	b[len(logMagic)+2] ^= 0x0F
	require.Greater(t, int(binary.LittleEndian.Uint32(b[len(logMagic):])), len(good))
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err := Open(dir)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.ErrorContains(t, err, fmt.Sprintf("frame at byte 8 of %d: its length", len(good)))
	assert.ErrorContains(t, err, "runs past the end, but the record it begins, of 3 dimensions, is")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, b, after, "nothing truncated")
}
