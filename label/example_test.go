package label_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"

	"github.com/cubestudio/cube"
	"github.com/cubestudio/cube/datasets"
	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/pod"
)

func ExampleConfig() {
	x, err := label.NewConfig().
		Header("Is the reply polite?").
		Text("reply", "reply").
		Choices("polite", "reply", label.Single, "yes", "no").
		XML()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(x)
	// Output:
	// <View>
	//   <Header value="Is the reply polite?"></Header>
	//   <Text name="reply" value="$reply"></Text>
	//   <Choices name="polite" toName="reply" choice="single">
	//     <Choice value="yes"></Choice>
	//     <Choice value="no"></Choice>
	//   </Choices>
	// </View>
}

func ExampleConfig_errors() {
	_, err := label.NewConfig().Text("reply", "reply").Choices("polite", "answer", label.Single).XML()
	fmt.Println(strings.ReplaceAll(err.Error(), ", ", "\n"))
	// Output:
	// [tags[1].toName[0]: Not found: "answer"
	// tags[1].options: Required value: at least one value]
}

func ExampleParseConfig() {
	cfg, err := label.ParseConfig(`<View><Text name="t" value="$text"/><Labels name="ner" toName="t"><Label value="PER"/><Label value="ORG"/></Labels></View>`)
	if err != nil {
		fmt.Println(err)
		return
	}
	ner, _ := cfg.Control("ner")
	fmt.Println(ner.Kind, ner.ToName, ner.Options)
	// Output: Labels [t] [PER ORG]
}

func ExampleStudio() {
	studio := label.Studio("labels").Namespace("team-nlp").
		Admin(pod.SecretKeyRef{Name: "labels-admin", Key: "email"}, pod.SecretKeyRef{Name: "labels-admin", Key: "password"}).
		Token(pod.SecretKeyRef{Name: "labels-admin", Key: "token"}).
		ExternalDatabase("labels-rds")
	d, err := studio.Build()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, e := range d.Spec.Template.Spec.Containers[0].Env {
		if e.ValueFrom != nil {
			fmt.Printf("%s from %s/%s\n", e.Name, e.ValueFrom.SecretKeyRef.Name, e.ValueFrom.SecretKeyRef.Key)
		} else {
			fmt.Printf("%s=%s\n", e.Name, e.Value)
		}
	}
	// Output:
	// LABEL_STUDIO_USERNAME from labels-admin/email
	// LABEL_STUDIO_PASSWORD from labels-admin/password
	// LABEL_STUDIO_USER_TOKEN from labels-admin/token
	// LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK=true
	// DJANGO_DB=default
	// POSTGRE_HOST from labels-rds/host
	// POSTGRE_PORT from labels-rds/port
	// POSTGRE_NAME from labels-rds/name
	// POSTGRE_USER from labels-rds/user
	// POSTGRE_PASSWORD from labels-rds/password
}

func ExampleStudio_errors() {
	_, err := label.Studio("labels").Objects()
	fmt.Println(strings.ReplaceAll(err.Error(), ", ", "\n"))
	// Output:
	// [admin.user: Required value: a Secret and key are required
	// admin.password: Required value: a Secret and key are required
	// token: Required value: a Secret and key are required]
}

func ExampleMLBackend() {
	var yaml strings.Builder
	err := cube.Render(&yaml, label.MLBackend("judge", "registry.local/label-backend:1").Namespace("team-nlp").
		Model("http://qwen-chat:8000/v1", "qwen").ModelVersion("qwen@1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, line := range strings.Split(yaml.String(), "\n") {
		if strings.HasPrefix(line, "kind:") || strings.Contains(line, "OPENAI_") || strings.Contains(line, "- containerPort") {
			fmt.Println(strings.TrimSpace(line))
		}
	}
	fmt.Println(label.BackendURL("judge", "team-nlp"))
	// Output:
	// kind: Service
	// kind: Deployment
	// - name: OPENAI_BASE_URL
	// - name: OPENAI_MODEL
	// - containerPort: 9090
	// http://judge.team-nlp.svc:9090
}

func ExampleClient() {
	ls := labeltest.NewServer("token")
	defer ls.Close()
	ctx := context.Background()
	c, err := label.NewClient(ls.URL, label.Token("token"))
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := c.CreateProject(ctx, "sentiment", "", label.TextClassification("positive", "negative"))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := c.ImportTasks(ctx, p.ID, []label.Task{{Data: map[string]any{"text": "great"}}, {Data: map[string]any{"text": "dull"}}})
	fmt.Println(res.TaskCount, err)
	_, err = c.GetProject(ctx, 42)
	fmt.Println(err)
	// Output:
	// 2 <nil>
	// label studio get project: GET /api/projects/42/: 404 Not Found: No Project matches the given query.
}

func ExampleBackend() {
	model := labeltest.NewModel("qwen", func(string) string { return `{"choices": ["positive"], "score": 0.9}` }, nil)
	defer model.Close()
	chat, _ := inference.NewClient(model.URL)
	backend, err := label.NewBackend(chat, label.ModelVersion("qwen@1"))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Mount it where Label Studio's ML backend URL points.
	srv := httptest.NewServer(backend)
	defer srv.Close()
	preds, err := backend.Predict(context.Background(), label.TextClassification("positive", "negative"),
		[]label.Task{{ID: 1, Data: map[string]any{"text": "loved it"}}})
	fmt.Println(preds[0].Result[0].Value.Choices, preds[0].Score, preds[0].ModelVersion, err)
	// Output: [positive] 0.9 qwen@1 <nil>
}

func ExamplePreferencePairs() {
	tasks := []label.Task{{ID: 1,
		Data: map[string]any{"prompt": "2+2?", "answer_a": "4", "answer_b": "5"},
		Annotations: []label.Annotation{{Result: []label.Result{{FromName: "preference", ToName: "answer_a", Type: "pairwise",
			Value: label.Value{Selected: "left"}}}}},
	}}
	pairs, err := label.PreferencePairs(tasks, datasets.Alpaca, label.PairFields{})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = pairs.WriteJSON(os.Stdout)
	// Output:
	// [
	//   {
	//     "instruction": "2+2?",
	//     "input": "",
	//     "chosen": "4",
	//     "rejected": "5"
	//   }
	// ]
}

func ExampleFleissKappa() {
	k, err := label.FleissKappa([][]int{{3, 0}, {0, 3}, {2, 1}})
	fmt.Printf("%.3f %v\n", k, err)
	// Output: 0.550 <nil>
}
