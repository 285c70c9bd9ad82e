package servetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
)

// ScoreResponse is vLLM's answer to /score and /v1/score
// (ScoreResponse in vllm/entrypoints/pooling/score/protocol.py).
type ScoreResponse struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Data    []ScoreData `json:"data"`
	Usage   struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// ScoreData is the score of one pair.
type ScoreData struct {
	Index  int     `json:"index"`
	Object string  `json:"object"`
	Score  float64 `json:"score"`
}

// RerankResponse is vLLM's answer to /rerank, /v1/rerank and /v2/rerank
// (RerankResponse in vllm/entrypoints/pooling/score/protocol.py): the
// documents by relevance, highest first.
type RerankResponse struct {
	ID      string         `json:"id"`
	Model   string         `json:"model"`
	Results []RerankResult `json:"results"`
	Usage   struct {
		PromptTokens int `json:"prompt_tokens"`
		TotalTokens  int `json:"total_tokens"`
	} `json:"usage"`
}

// RerankResult is one document of a rerank.
type RerankResult struct {
	Index          int     `json:"index"`
	RelevanceScore float64 `json:"relevance_score"`
	Document       struct {
		Text string `json:"text"`
	} `json:"document"`
}

// TEIRank is one element of Text Embeddings Inference's /rerank answer
// (Rank in router/src/http/types.rs at v1.9.3): the answer is a list of
// them, highest score first.
type TEIRank struct {
	Index int     `json:"index"`
	Text  *string `json:"text,omitempty"`
	Score float64 `json:"score"`
}

// pairs reads the two sides of vLLM's score request. The request names
// them text_1 and text_2 (the long-standing form), or queries with
// documents or items, or data_1 and data_2 (the forms of the ScoreRequest
// union in newer protocol.py); each side is a string or a list.
func pairs(body []byte) (left, right []string, ok bool) {
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return nil, nil, false
	}
	for _, names := range [][2]string{{"text_1", "text_2"}, {"queries", "documents"}, {"queries", "items"}, {"data_1", "data_2"}} {
		a, okA := req[names[0]]
		b, okB := req[names[1]]
		if !okA || !okB {
			continue
		}
		left, okA = inputs(a)
		right, okB = inputs(b)
		return left, right, okA && okB
	}
	return nil, nil, false
}

func (h *Handler) scores(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var head struct {
		Model string `json:"model"`
	}
	_ = json.Unmarshal(body, &head)
	if !h.checkModel(w, head.Model) {
		return
	}
	left, right, ok := pairs(body)
	// vLLM scores one query against many documents (1:N) or pairs them
	// one to one (N:N).
	if !ok || (len(left) != 1 && len(left) != len(right)) {
		writeError(w, http.StatusBadRequest, "text_1 and text_2: give one text and a list, or two lists of the same length")
		return
	}
	notePrompt(r, strings.Join(left, "\n"))
	resp := ScoreResponse{ID: fmt.Sprintf("score-%x", fnv64(string(body))), Object: "list", Created: h.created, Model: h.model}
	for i, doc := range right {
		q := left[0]
		if len(left) > 1 {
			q = left[i]
		}
		resp.Data = append(resp.Data, ScoreData{Index: i, Object: "score", Score: h.score(q, doc)})
		resp.Usage.PromptTokens += words(q) + words(doc)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	h.succeeded.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

// rerank answers vLLM's rerank (query, documents, top_n) and, on /rerank,
// TEI's (query, texts, return_text), which it tells apart by "texts".
func (h *Handler) rerank(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model      string   `json:"model"`
		Query      *string  `json:"query"`
		Documents  []string `json:"documents"`
		TopN       int      `json:"top_n"`
		Texts      []string `json:"texts"`
		ReturnText bool     `json:"return_text"`
	}
	if err := json.NewDecoder(bytes.NewReader(body)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if req.Query == nil {
		writeError(w, http.StatusBadRequest, "query: required")
		return
	}
	notePrompt(r, *req.Query)
	if req.Texts != nil && r.URL.Path == "/rerank" {
		ranks := make([]TEIRank, len(req.Texts))
		for i, text := range req.Texts {
			ranks[i] = TEIRank{Index: i, Score: h.score(*req.Query, text)}
			if req.ReturnText {
				ranks[i].Text = &req.Texts[i]
			}
		}
		sort.SliceStable(ranks, func(a, b int) bool { return ranks[a].Score > ranks[b].Score })
		h.succeeded.Add(1)
		writeJSON(w, http.StatusOK, ranks)
		return
	}
	if !h.checkModel(w, req.Model) {
		return
	}
	if len(req.Documents) == 0 {
		writeError(w, http.StatusBadRequest, "documents: at least one document is required")
		return
	}
	resp := RerankResponse{ID: fmt.Sprintf("rerank-%x", fnv64(string(body))), Model: h.model}
	for i, doc := range req.Documents {
		res := RerankResult{Index: i, RelevanceScore: h.score(*req.Query, doc)}
		res.Document.Text = doc
		resp.Results = append(resp.Results, res)
		resp.Usage.PromptTokens += words(*req.Query) + words(doc)
	}
	resp.Usage.TotalTokens = resp.Usage.PromptTokens
	sort.SliceStable(resp.Results, func(a, b int) bool { return resp.Results[a].RelevanceScore > resp.Results[b].RelevanceScore })
	// top_n 0 keeps every document, as vLLM does.
	if req.TopN > 0 && req.TopN < len(resp.Results) {
		resp.Results = resp.Results[:req.TopN]
	}
	h.succeeded.Add(1)
	writeJSON(w, http.StatusOK, resp)
}

// teiEmbed answers TEI's /embed: {"inputs": a string or a list} gives a
// list of vectors (EmbedRequest and EmbedResponse in
// router/src/http/types.rs).
func (h *Handler) teiEmbed(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Inputs json.RawMessage `json:"inputs"`
	}
	if !decode(w, r, &req) {
		return
	}
	in, ok := inputs(req.Inputs)
	if !ok {
		writeError(w, http.StatusUnprocessableEntity, "inputs: must be a string or a non-empty list of strings")
		return
	}
	notePrompt(r, strings.Join(in, "\n"))
	out := make([][]float32, len(in))
	for i, text := range in {
		out[i] = h.embed(text)
	}
	h.succeeded.Add(1)
	writeJSON(w, http.StatusOK, out)
}
