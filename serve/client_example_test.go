package serve_test

import (
	"context"
	"fmt"
	"time"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/cubetest"
	"github.com/cubestudio/cube/hardware"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/serve"
	"github.com/cubestudio/cube/serve/servetest"
)

// A ready client for a served model. In a cluster, serve.Client waits for
// the release and returns a client at the in-cluster URL; here the cluster
// is cubetest's (the test plays the Deployment controller with MarkReady)
// and the engine is a servetest server, reached through ClientAt as a
// port-forward would be reached from outside the cluster.
func ExampleClientAt() {
	ctx := context.Background()
	cluster := cubetest.NewCluster(nil, cube.Namespace("team-a"))
	svc := serve.VLLM("qwen-chat", "Qwen/Qwen2.5-7B-Instruct").Namespace("team-a").On(hardware.H100).Accelerators(1)
	rel, err := cluster.Client.Apply(ctx, svc)
	if err != nil {
		panic(err)
	}
	engine := servetest.New("Qwen/Qwen2.5-7B-Instruct", servetest.Answer(func(string) string { return "pong" }))
	defer engine.Close()
	go func() {
		time.Sleep(50 * time.Millisecond) // the model loads
		_ = cluster.MarkReady(ctx, rel)
	}()

	c, err := serve.ClientAt(ctx, rel, svc, engine.URL)
	if err != nil {
		panic(err)
	}
	resp, err := c.Chat(ctx, inference.UserMessage("ping"))
	if err != nil {
		panic(err)
	}
	fmt.Println(c.Model(), resp.Choices[0].Message.Content)
	url, _ := serve.URL(svc)
	fmt.Println("in the cluster:", url)
	// Output:
	// Qwen/Qwen2.5-7B-Instruct pong
	// in the cluster: http://qwen-chat-api.team-a:8000
}
