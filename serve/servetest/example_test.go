package servetest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	openai "github.com/sashabaranov/go-openai"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve/servetest"
)

func Example() {
	s := servetest.New("qwen-chat", servetest.Answer(func(prompt string) string {
		if strings.Contains(prompt, "France") {
			return "Paris"
		}
		return "I do not know"
	}))
	defer s.Close()

	c, err := inference.NewClient(s.URL)
	if err != nil {
		panic(err)
	}
	resp, err := c.Chat(context.Background(), inference.UserMessage("Capital of France?"))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Model, resp.Choices[0].Message.Content)
	for _, r := range s.Requests() {
		fmt.Printf("%s %s %d %q\n", r.Method, r.Path, r.Status, r.Prompt)
	}
	// Output:
	// qwen-chat Paris
	// GET /v1/models 200 ""
	// POST /v1/chat/completions 200 "Capital of France?"
}

// A client's retry path: the first chat gets 503 with Retry-After, the next
// one is answered.
func ExampleHandler_Inject() {
	s := servetest.New("qwen-chat")
	defer s.Close()
	f := &servetest.Failure{Path: "/v1/chat/completions", Status: http.StatusServiceUnavailable, Times: 1}
	s.Inject(f)

	c, _ := inference.NewClient(s.URL, inference.ServedModel("qwen-chat"))
	_, err := c.Chat(context.Background(), inference.UserMessage("hi"))
	fmt.Println(err)
	resp, err := c.Chat(context.Background(), inference.UserMessage("hi"))
	fmt.Println(resp.Choices[0].Message.Content, err, f.Hits())
	// Output:
	// chat with qwen-chat: error, status code: 503, status: 503 Service Unavailable, message: injected failure
	// servetest: hi <nil> 1
}

// go-openai talks to the server unmodified, at URL + "/v1".
func ExampleNew_goOpenAI() {
	s := servetest.New("bge-m3", servetest.Embed(func(input string) []float32 {
		return []float32{float32(len(input)), 1}
	}))
	defer s.Close()

	cfg := openai.DefaultConfig("")
	cfg.BaseURL = s.URL + "/v1"
	client := openai.NewClientWithConfig(cfg)
	resp, err := client.CreateEmbeddings(context.Background(), openai.EmbeddingRequestStrings{
		Model: "bge-m3", Input: []string{"abc", "hello"},
	})
	if err != nil {
		panic(err)
	}
	for _, e := range resp.Data {
		fmt.Println(e.Index, e.Embedding)
	}
	// Output:
	// 0 [3 1]
	// 1 [5 1]
}

// vLLM's rerank route, with the default score (the share of the query's
// words a document contains).
func ExampleNew_rerank() {
	s := servetest.New("bge-reranker")
	defer s.Close()
	resp, err := http.Post(s.URL+"/rerank", "application/json", strings.NewReader(
		`{"model":"bge-reranker","query":"red apple","documents":["blue sky","a red apple","red car"],"top_n":2}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.StatusCode, strings.TrimSpace(string(body)))
	// Output:
	// 200 {"id":"rerank-a63809e2cd907db8","model":"bge-reranker","results":[{"index":1,"relevance_score":1,"document":{"text":"a red apple"}},{"index":2,"relevance_score":0.5,"document":{"text":"red car"}}],"usage":{"prompt_tokens":13,"total_tokens":13}}
}
