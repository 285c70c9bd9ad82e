package inference_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve/servetest"
)

// The examples talk to serve/servetest's server, which speaks the OpenAI
// API the way vLLM does; in a cluster the endpoint is the engine's
// Service, such as http://qwen-chat-api.team-a:8000 (serve.Client
// connects to it once its release is Ready).

func ExampleNewClient() {
	srv := servetest.New("qwen-chat", servetest.APIKey("sk-team-a"),
		servetest.Answer(func(prompt string) string { return "You said: " + prompt }))
	defer srv.Close()
	os.Setenv("QWEN_CHAT_API_KEY", "sk-team-a")
	defer os.Unsetenv("QWEN_CHAT_API_KEY")

	c, err := inference.NewClient(srv.URL, inference.ServedModel("qwen-chat"), inference.APIKeyFromEnv("QWEN_CHAT_API_KEY"))
	if err != nil {
		panic(err)
	}
	resp, err := c.Chat(context.Background(), inference.SystemMessage("Answer in one line."), inference.UserMessage("ping"))
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Choices[0].Message.Content)

	_, err = inference.NewClient("qwen-chat:8000")
	fmt.Println(err)
	// Output:
	// You said: ping
	// new openai client: endpoint: Invalid value: "qwen-chat:8000": must be an http or https URL
}

func ExampleClient_ChatStream() {
	srv := servetest.New("qwen-chat", servetest.Answer(func(string) string { return "Hello there" }))
	defer srv.Close()
	// No ServedModel: the client asks /v1/models and takes the only model.
	c, err := inference.NewClient(srv.URL)
	if err != nil {
		panic(err)
	}
	stream, err := c.ChatStream(context.Background(), inference.UserMessage("hello"))
	if err != nil {
		panic(err)
	}
	defer stream.Close()
	for {
		chunk, err := stream.Recv()
		if errors.Is(err, io.EOF) { // the server sent data: [DONE]
			break
		}
		if err != nil {
			panic(err)
		}
		fmt.Print(chunk.Choices[0].Delta.Content)
	}
	fmt.Println()
	fmt.Println(c.Model())
	// Output:
	// Hello there
	// qwen-chat
}

func ExampleClient_Complete() {
	srv := servetest.New("qwen-base", servetest.Answer(func(prompt string) string { return prompt + " world" }))
	defer srv.Close()
	c, err := inference.NewClient(srv.URL, inference.ServedModel("qwen-base"))
	if err != nil {
		panic(err)
	}
	resp, err := c.Complete(context.Background(), "hello")
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Choices[0].Text)
	// Output: hello world
}

func ExampleClient_Embed() {
	srv := servetest.New("bge-m3", servetest.Embed(func(input string) []float32 { return []float32{float32(len(input)), 1} }))
	defer srv.Close()
	c, err := inference.NewClient(srv.URL+"/v1", inference.ServedModel("bge-m3"))
	if err != nil {
		panic(err)
	}
	vectors, err := c.Embed(context.Background(), "a", "bbb")
	if err != nil {
		panic(err)
	}
	fmt.Println(vectors)
	// Output: [[1 1] [3 1]]
}
