package labeltest_test

import (
	"context"
	"fmt"

	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
)

// A Server stands in for Label Studio behind a label.Client: create a
// project, read it back, and see the requests the client made.
func ExampleServer() {
	srv := labeltest.NewServer("secret-token")
	defer srv.Close()
	c, err := label.NewClient(srv.URL, label.Token(srv.Token))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	cfg, err := label.ParseConfig(`<View><Text name="text" value="$text"/><Choices name="team" toName="text"><Choice value="gpu"/><Choice value="data"/></Choices></View>`)
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.CreateProject(ctx, "triage", "tickets to route", cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	got, err := c.GetProject(ctx, p.ID)
	fmt.Println(got.Title, err)
	for _, r := range srv.Requests() {
		fmt.Println(r)
	}
	// Output:
	// triage <nil>
	// POST /api/projects/
	// GET /api/projects/1/
}
