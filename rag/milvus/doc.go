// Package milvus is the production store behind rag.Store: one Milvus
// collection per knowledge base, with the chunk's fields as scalar fields,
// its vector in a dense field searched by cosine similarity through an
// HNSW index, and its text fed by Milvus's BM25 function into a sparse
// field, so keyword search runs in Milvus as well. It talks to Milvus with
// github.com/milvus-io/milvus/client/v2. It is a package of its own so that
// importing rag does not pull in the Milvus client.
//
//	store, err := milvus.Open(ctx, milvus.Config{Address: "milvus:19530",
//		Collection: "nlp_handbook", Dimensions: 384, APIKey: os.Getenv("MILVUS_TOKEN")})
//	kb := rag.New("nlp/handbook", store, embedder)
//
// Milvus cannot run where cube is tested: the tests run the real client
// against an in-process gRPC server that implements the part of
// milvus-proto's MilvusService this store calls (see server_test.go).
//
// Hybrid retrieval with equal weights runs in Milvus: SearchHybrid sends
// one HybridSearch with a dense and a BM25 request and Milvus's RRF ranker
// (rag.HybridSearcher); with unequal weights rag fuses the two lists
// itself. List reads at most 16,384 chunks per filter, Milvus's query
// window.
package milvus
