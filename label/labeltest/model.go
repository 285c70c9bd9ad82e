package labeltest

import (
	"net/http"

	"github.com/cubestudio/cube/serve/servetest"
)

// Model is a stand-in OpenAI-compatible model for label.Backend: a
// servetest.Server (so Requests, Prompts and Inject are there too) with
// the answers a labeling test sets.
type Model struct {
	*servetest.Server
	Name string
}

// NewModel starts a stand-in model named name; Close it when done. answer
// decides each chat answer from the last user message (nil answers "{}");
// embed decides each input's vector (nil refuses embeddings with 404, as a
// chat-only engine does).
func NewModel(name string, answer func(prompt string) string, embed func(input string) []float32) *Model {
	if answer == nil {
		answer = func(string) string { return "{}" }
	}
	opts := []servetest.Option{servetest.Answer(answer), servetest.Embed(embed)}
	s := servetest.New(name, opts...)
	if embed == nil {
		s.Inject(&servetest.Failure{Path: "/v1/embeddings", Status: http.StatusNotFound})
	}
	return &Model{Server: s, Name: name}
}
