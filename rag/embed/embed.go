package embed

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"

	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/cubestudio/cube/rag/internal/vecmath"
)

// Embedder turns texts into vectors, one per text in order.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	// Model names the embedding model. A knowledge base records it and
	// refuses to mix vectors of different models; caches key on it.
	Model() string
}

// FeatureHasher is a lexical embedder that needs no model: each text
// becomes a vector of hashed features (the "hashing trick"), its lower-cased
// words weighted 1 and the character trigrams of each word weighted 0.5,
// each feature's count damped to 1+ln(count), signed by a second hash so
// that collisions cancel on average, and the vector scaled to unit length.
// Identical text embeds to bit-identical vectors (features are summed in
// the order they occur), so a knowledge base's unchanged check matches.
// Cosine similarity between two such vectors measures shared words and
// word parts, so it finds "indexing" for "index" where BM25 would not; it
// knows nothing of synonyms. It is the embedded default because no neural
// model can be downloaded where cube's tests run; use OpenAI with a
// served model (serve.TEI or vLLM's embedding task) for semantic search.
type FeatureHasher struct {
	dims int
}

// maxHashedDims bounds FeatureHasher's dimensions. Each text becomes a
// dense vector of dims float32s, so an unbounded dims is an unbounded
// allocation per text (1<<40 asked for 4 TiB and the process was killed).
// Served embedding models stay far below it: small sentence encoders use
// 384 or 768 dimensions, the largest in common use 4,096.
const maxHashedDims = 1 << 16

// HashedFeatures returns a FeatureHasher making vectors of dims
// dimensions (384 matches common small sentence encoders). Embed refuses
// dims outside 1 to 65,536.
func HashedFeatures(dims int) *FeatureHasher { return &FeatureHasher{dims: dims} }

// Model returns "hashed-features-v1-<dims>".
func (h *FeatureHasher) Model() string {
	if h == nil {
		return ""
	}
	return fmt.Sprintf("hashed-features-v1-%d", h.dims)
}

// Embed hashes each text. A text without words is the zero vector.
func (h *FeatureHasher) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if h == nil {
		return nil, errors.New("embed: nil FeatureHasher: use embed.HashedFeatures")
	}
	if h.dims <= 0 {
		return nil, fmt.Errorf("embed: hashed features: dims: %d: must be positive", h.dims)
	}
	if h.dims > maxHashedDims {
		return nil, fmt.Errorf("embed: hashed features: dims: %d: must be at most %d", h.dims, maxHashedDims)
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if i%256 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		out[i] = h.vector(t)
	}
	return out, nil
}

// vector hashes text. Features are summed in the order they first occur
// in the text, never in map order: float addition is not associative, so
// map order made the same text embed to different vectors from one call
// to the next, and a knowledge base's unchanged-record check then missed.
func (h *FeatureHasher) vector(text string) []float32 {
	type feature struct {
		name  string
		count float64
	}
	var features []feature
	index := map[string]int{}
	add := func(name string, c float64) {
		i, ok := index[name]
		if !ok {
			i = len(features)
			index[name] = i
			features = append(features, feature{name: name})
		}
		features[i].count += c
	}
	for _, w := range lex.Terms(text) {
		if lex.Stop(w) {
			add("w:"+w, 0.1)
			continue
		}
		add("w:"+w, 1)
		if len(w) > 3 {
			p := "^" + w + "$"
			for i := 0; i+3 <= len(p); i++ {
				add("t:"+p[i:i+3], 0.5)
			}
		}
	}
	v := make([]float32, h.dims)
	for _, f := range features {
		hf := fnv.New64a()
		hf.Write([]byte(f.name))
		sum := hf.Sum64()
		c := f.count
		weight := 1 + math.Log(c)
		if c < 1 { // stop words only
			weight = c
		}
		if f.name[0] == 't' {
			weight = 0.5 * (1 + math.Log(2*c))
		}
		if sum>>63 == 1 {
			weight = -weight
		}
		v[sum%uint64(h.dims)] += float32(weight)
	}
	vecmath.Normalize(v)
	return v
}
