package rag

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"sync"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/rag/embed"
	"github.com/cubestudio/cube/rag/internal/durable"
	"github.com/cubestudio/cube/rag/internal/lex"
	"github.com/cubestudio/cube/rag/load"
	"github.com/cubestudio/cube/rag/split"
	"github.com/cubestudio/cube/rag/store"
)

// KnowledgeBase is a named collection of chunks: documents go in through
// a splitter and an embedder into a store, questions come out as hits or
// cited answers. It is safe for concurrent use; ingests run one at a time.
type KnowledgeBase struct {
	name     string
	store    Store
	embedder Embedder
	splitter Splitter
	chat     *inference.Client

	ingest sync.Mutex
}

// New returns a knowledge base over store whose chunks embedder embeds.
// Its splitter is split.Markdown(split.Recursive(1000, 150)): header-aware for
// Markdown, recursive for other text.
func New(name string, store Store, embedder Embedder) *KnowledgeBase {
	return &KnowledgeBase{name: name, store: store, embedder: embedder, splitter: split.Markdown(split.Recursive(1000, 150))}
}

// Splitter replaces how documents are cut into chunks.
func (kb *KnowledgeBase) Splitter(s Splitter) *KnowledgeBase {
	if kb != nil {
		kb.splitter = s
	}
	return kb
}

// Chat makes Answer write answers with the model client serves; without
// it answers are extractive.
func (kb *KnowledgeBase) Chat(c *inference.Client) *KnowledgeBase {
	if kb != nil {
		kb.chat = c
	}
	return kb
}

// Name returns the knowledge base's name.
func (kb *KnowledgeBase) Name() string {
	if kb == nil {
		return ""
	}
	return kb.name
}

// Store returns the store the knowledge base writes to.
func (kb *KnowledgeBase) Store() Store {
	if kb == nil {
		return nil
	}
	return kb.store
}

func (kb *KnowledgeBase) validate() error {
	if kb == nil {
		return errors.New("knowledge base: nil: use rag.New or Library.Open")
	}
	var errs []error
	if kb.name == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if kb.store == nil {
		errs = append(errs, errors.New("store: required"))
	}
	if kb.embedder == nil {
		errs = append(errs, errors.New("embedder: required"))
	}
	if kb.splitter == nil {
		errs = append(errs, errors.New("splitter: required"))
	}
	if len(errs) > 0 {
		return fmt.Errorf("knowledge base %q: %w", kb.name, errors.Join(errs...))
	}
	return nil
}

// IngestReport says what an Ingest changed.
type IngestReport struct {
	Sources   int // sources given
	Unchanged int // sources whose chunks were all stored already
	Added     int // chunks new to the store
	Updated   int // chunks whose text stayed but whose place changed
	Deleted   int // chunks of the given sources that the new text lacks
	Embedded  int // texts sent to the embedder
}

// Ingest adds documents, replacing what each source held before: all
// documents of one source must come in one call (a PDF's pages, a CSV's
// rows). A source whose chunks are all stored as they are writes nothing
// and embeds nothing, so ingesting the same files again is free; a changed
// source embeds only its new chunks and deletes its chunks that are gone.
// The whole call is one store write (store.Batch): the embedded store
// makes it visible at once, fsyncs it once, and after a crash holds all of
// it or none of it; a search never sees a source half replaced. An error
// (a splitter's, an embedder's) writes nothing.
func (kb *KnowledgeBase) Ingest(ctx context.Context, docs ...Document) (IngestReport, error) {
	var rep IngestReport
	if err := kb.validate(); err != nil {
		return rep, err
	}
	var errs []error
	bySource := map[string][]Document{}
	var order []string
	for i, d := range docs {
		if d.Source == "" {
			errs = append(errs, fmt.Errorf("docs[%d].source: required", i))
			continue
		}
		if _, ok := bySource[d.Source]; !ok {
			order = append(order, d.Source)
		}
		bySource[d.Source] = append(bySource[d.Source], d)
	}
	if len(errs) > 0 {
		return rep, fmt.Errorf("ingest: %w", errors.Join(errs...))
	}
	kb.ingest.Lock()
	defer kb.ingest.Unlock()
	rep.Sources = len(order)
	var batch store.Batch
	for _, src := range order {
		if err := ctx.Err(); err != nil {
			return IngestReport{}, err
		}
		if err := kb.ingestSource(ctx, src, bySource[src], &rep, &batch); err != nil {
			return IngestReport{}, fmt.Errorf("ingest %s: %w", src, err)
		}
	}
	if len(batch.Upsert) == 0 && len(batch.Delete) == 0 {
		return rep, nil
	}
	if err := kb.store.Apply(ctx, batch); err != nil {
		return IngestReport{}, fmt.Errorf("ingest: %w", err)
	}
	return rep, nil
}

// ingestSource adds to batch what source src needs written and deleted.
func (kb *KnowledgeBase) ingestSource(ctx context.Context, src string, docs []Document, rep *IngestReport, batch *store.Batch) error {
	chunks, err := kb.splitter.Split(docs...)
	if err != nil {
		return err
	}
	// A chunk without a word ("---", a lone code fence) can be found by
	// neither BM25 nor a lexical vector, and embed.FeatureHasher gives it no
	// direction the store could compare: it is not stored.
	chunks = slices.DeleteFunc(chunks, func(c Chunk) bool { return len(lex.Terms(c.Text)) == 0 })
	for i := range chunks {
		if chunks[i].Metadata == nil {
			chunks[i].Metadata = map[string]string{}
		}
		chunks[i].Metadata["embedder"] = kb.embedder.Model()
	}
	// The embedded store finds a source's chunks by an index.
	existing, err := kb.store.List(ctx, Filter{"source": src})
	if err != nil {
		return err
	}
	old := make(map[string]Chunk, len(existing))
	for _, c := range existing {
		old[c.ID] = c
	}
	var write []Chunk
	keep := map[string]bool{}
	for _, c := range chunks {
		keep[c.ID] = true
		prev, ok := old[c.ID]
		switch {
		case !ok:
			rep.Added++
			write = append(write, c)
		case !prev.Equal(c):
			rep.Updated++
			write = append(write, c)
		}
	}
	var gone []string
	for _, c := range existing {
		if !keep[c.ID] {
			gone = append(gone, c.ID)
		}
	}
	if len(write) == 0 && len(gone) == 0 {
		rep.Unchanged++
		return nil
	}
	if len(write) > 0 {
		texts := make([]string, len(write))
		for i, c := range write {
			texts[i] = c.Text
		}
		vecs, err := kb.embedder.Embed(ctx, texts)
		if err != nil {
			return err
		}
		if len(vecs) != len(texts) {
			return fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
		}
		rep.Embedded += len(texts)
		for i := range write {
			batch.Upsert = append(batch.Upsert, Record{Chunk: write[i], Vector: vecs[i]})
		}
	}
	batch.Delete = append(batch.Delete, gone...)
	rep.Deleted += len(gone)
	return nil
}

// IngestDir loads the directory tree at root (see load.Dir) and ingests
// what loaded; files that failed are reported together with the ingest's
// own error.
func (kb *KnowledgeBase) IngestDir(ctx context.Context, root string) (IngestReport, error) {
	docs, loadErr := load.Dir(ctx, root)
	rep, err := kb.Ingest(ctx, docs...)
	return rep, errors.Join(loadErr, err)
}

// DeleteSource removes every chunk of source and returns how many.
func (kb *KnowledgeBase) DeleteSource(ctx context.Context, source string) (int, error) {
	if err := kb.validate(); err != nil {
		return 0, err
	}
	if source == "" {
		return 0, errors.New("delete source: source: required")
	}
	kb.ingest.Lock()
	defer kb.ingest.Unlock()
	cs, err := kb.store.List(ctx, Filter{"source": source})
	if err != nil {
		return 0, fmt.Errorf("delete source %s: %w", source, err)
	}
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.ID
	}
	if err := kb.store.Delete(ctx, ids...); err != nil {
		return 0, fmt.Errorf("delete source %s: %w", source, err)
	}
	return len(ids), nil
}

// SourceInfo describes one source of a knowledge base.
type SourceInfo struct {
	Source string
	Title  string
	Chunks int
	Bytes  int // of chunk text
}

// Sources lists the knowledge base's sources in order.
func (kb *KnowledgeBase) Sources(ctx context.Context) ([]SourceInfo, error) {
	if err := kb.validate(); err != nil {
		return nil, err
	}
	cs, err := kb.store.List(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("sources: %w", err)
	}
	var out []SourceInfo
	for _, c := range cs {
		if len(out) == 0 || out[len(out)-1].Source != c.Source {
			out = append(out, SourceInfo{Source: c.Source, Title: c.Title})
		}
		out[len(out)-1].Chunks++
		out[len(out)-1].Bytes += len(c.Text)
	}
	return out, nil
}

// Stats summarises a knowledge base.
type Stats struct {
	Name     string
	Sources  int
	Chunks   int
	Bytes    int // of chunk text
	Embedder string
	// Models lists the embedding models the stored chunks were embedded
	// with; more than one means some sources need ingesting again.
	Models []string
}

// Stats counts the knowledge base's sources, chunks and text.
func (kb *KnowledgeBase) Stats(ctx context.Context) (Stats, error) {
	if err := kb.validate(); err != nil {
		return Stats{}, err
	}
	cs, err := kb.store.List(ctx, nil)
	if err != nil {
		return Stats{}, fmt.Errorf("stats: %w", err)
	}
	st := Stats{Name: kb.name, Embedder: kb.embedder.Model(), Chunks: len(cs)}
	models := map[string]bool{}
	prev := ""
	for i, c := range cs {
		if i == 0 || c.Source != prev {
			st.Sources++
			prev = c.Source
		}
		st.Bytes += len(c.Text)
		models[c.Metadata["embedder"]] = true
	}
	for m := range models {
		st.Models = append(st.Models, m)
	}
	sort.Strings(st.Models)
	return st, nil
}

// Retrieve returns the chunks that best match query; see the QueryOptions.
func (kb *KnowledgeBase) Retrieve(ctx context.Context, query string, opts ...QueryOption) ([]Hit, error) {
	hits, _, err := kb.retrieveWith(ctx, query, opts)
	if err != nil {
		return nil, fmt.Errorf("retrieve: %w", err)
	}
	return hits, nil
}

func (kb *KnowledgeBase) retrieveWith(ctx context.Context, query string, opts []QueryOption) ([]Hit, queryOptions, error) {
	if err := kb.validate(); err != nil {
		return nil, queryOptions{}, err
	}
	o, err := buildQueryOptions(opts)
	if err != nil {
		return nil, o, err
	}
	hits, err := retrieve(ctx, kb.store, kb.embedder, query, o)
	return hits, o, err
}

// Library keeps a team's knowledge bases as directories of embedded
// stores under root: root/<team>/<name>.
type Library struct {
	root string
}

// OpenLibrary returns the library at root (created on first Open).
func OpenLibrary(root string) *Library { return &Library{root: root} }

var namePattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,62}[a-z0-9])?$`)

type kbManifest struct {
	Embedder string `json:"embedder"`
}

// Open opens (creating) the knowledge base name of team, embedded with
// embedder (nil: embed.HashedFeatures(384)). A knowledge base remembers its
// embedder's model; opening it with another is an error, since vectors of
// different models cannot be compared.
func (l *Library) Open(team, name string, embedder Embedder, opts ...store.LocalOption) (*KnowledgeBase, error) {
	var errs []error
	if l == nil || l.root == "" {
		errs = append(errs, errors.New("library: root: required: use rag.OpenLibrary"))
	}
	if !namePattern.MatchString(team) {
		errs = append(errs, fmt.Errorf("team: %q: must be 1-64 lower-case letters, digits, '.', '_' or '-'", team))
	}
	if !namePattern.MatchString(name) {
		errs = append(errs, fmt.Errorf("name: %q: must be 1-64 lower-case letters, digits, '.', '_' or '-'", name))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("open knowledge base: %w", errors.Join(errs...))
	}
	if embedder == nil {
		embedder = embed.HashedFeatures(384)
	}
	dir := filepath.Join(l.root, team, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open knowledge base %s/%s: %w", team, name, err)
	}
	manifest := filepath.Join(dir, "kb.json")
	b, err := os.ReadFile(manifest)
	switch {
	case err == nil:
		var m kbManifest
		if err := json.Unmarshal(b, &m); err != nil {
			return nil, fmt.Errorf("open knowledge base %s/%s: %s: %w", team, name, manifest, err)
		}
		if m.Embedder != embedder.Model() {
			return nil, fmt.Errorf("open knowledge base %s/%s: embedder: %q, but its chunks were embedded with %q", team, name, embedder.Model(), m.Embedder)
		}
	case errors.Is(err, os.ErrNotExist):
		b, _ := json.Marshal(kbManifest{Embedder: embedder.Model()})
		if err := writeFileAtomic(manifest, b); err != nil {
			return nil, fmt.Errorf("open knowledge base %s/%s: %w", team, name, err)
		}
	default:
		return nil, fmt.Errorf("open knowledge base %s/%s: %w", team, name, err)
	}
	store, err := store.Open(dir, opts...)
	if err != nil {
		return nil, err
	}
	return New(team+"/"+name, store, embedder), nil
}

// List returns the library's knowledge bases as "team/name", sorted.
func (l *Library) List() ([]string, error) {
	if l == nil || l.root == "" {
		return nil, errors.New("library: root: required: use rag.OpenLibrary")
	}
	matches, err := filepath.Glob(filepath.Join(l.root, "*", "*", "kb.json"))
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		dir := filepath.Dir(m)
		out = append(out, filepath.Base(filepath.Dir(dir))+"/"+filepath.Base(dir))
	}
	sort.Strings(out)
	return out, nil
}

// Close closes the knowledge base's store.
func (kb *KnowledgeBase) Close() error {
	if kb == nil || kb.store == nil {
		return nil
	}
	return kb.store.Close()
}

func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}
