package label_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/inference"
	"github.com/cubestudio/cube/internal/testsupport/contract"
	"github.com/cubestudio/cube/label"
	"github.com/cubestudio/cube/label/labeltest"
	"github.com/cubestudio/cube/pod"
)

// FuzzParseConfig: any input is parsed or refused without a panic, and
// whatever parses renders to XML that parses back to the same tags.
func FuzzParseConfig(f *testing.F) {
	for _, c := range []*label.Config{label.TextClassification("a", "b"), label.PairwiseRanking(), label.ImageBoxes("x"), label.ResponseRating(3)} {
		x, err := c.XML()
		require.NoError(f, err)
		f.Add(x)
	}
	f.Add(`<View><View><Text name="t" value="$t"/></View><Choices name="c" toName="t"><Choice value="&amp;"/></Choices></View>`)
	f.Fuzz(func(t *testing.T, in string) {
		cfg, err := label.ParseConfig(in)
		if err != nil {
			return
		}
		x, err := cfg.XML()
		require.NoError(t, err)
		back, err := label.ParseConfig(x)
		require.NoError(t, err)
		require.Equal(t, cfg.Tags(), back.Tags())
	})
}

// FuzzConfigBuilder: arbitrary names, keys and options are validated or
// rendered, never a panic, and what renders parses back unchanged.
func FuzzConfigBuilder(f *testing.F) {
	f.Add("text", "text", "label", "pos", "neg", 5, true)
	f.Add("", "$", "a,b", " ", "\x00", -1, false)
	ls, err := contract.Load("testdata/contracts/label-studio.tsv")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, object, key, control, opt1, opt2 string, rating int, multiple bool) {
		mode := label.Single
		if multiple {
			mode = label.Multiple
		}
		cfg := label.NewConfig().Header(opt1).Text(object, key).Choices(control, object, mode, opt1, opt2).Rating(control+"_r", object, rating)
		x, err := cfg.XML()
		if err != nil {
			return
		}
		require.NoError(t, checkConfig(ls, "config", configElements(t, x)), "what renders is what Label Studio reads: %s", x)
		back, err := label.ParseConfig(x)
		require.NoError(t, err, x)
		require.Equal(t, cfg.Tags(), back.Tags())
	})
}

// studioInput is one input of FuzzStudio.
type studioInput struct{ name, secret, key, tokenKey, size, host, db, dbKey string }

func (in studioInput) studio() *label.StudioServer {
	s := label.Studio(in.name).Admin(pod.SecretKeyRef{Name: in.secret, Key: in.key}, pod.SecretKeyRef{Name: in.secret, Key: in.key}).Token(pod.SecretKeyRef{Name: in.secret, Key: in.tokenKey}).Storage(in.size, "").Host(in.host)
	if in.db != "" {
		s.Postgres(pod.SecretKeyRef{Name: in.db, Key: in.dbKey}, in.size, "")
	}
	return s
}

// studioSeeds are FuzzStudio's seeds; TestFuzzCorpusApplies runs them too.
var studioSeeds = []studioInput{
	{"labels", "admin", "email", "token", "10Gi", "http://x", "db", "pw"},
	{"", "", "", "", "-1", "::", "", ""},
	// A host with credentials was accepted and rendered as a literal.
	{"labels", "admin", "email", "token", "10Gi", "http://u:p@x", "", ""},
}

// FuzzStudio: any names, sizes, secrets and URLs give objects or errors,
// never a panic, and never a literal credential.
func FuzzStudio(f *testing.F) {
	for _, in := range studioSeeds {
		f.Add(in.name, in.secret, in.key, in.tokenKey, in.size, in.host, in.db, in.dbKey)
	}
	ls, err := contract.Load("testdata/contracts/label-studio.tsv")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, name, secret, key, tokenKey, size, host, db, dbKey string) {
		s := studioInput{name, secret, key, tokenKey, size, host, db, dbKey}.studio()
		objs, err := s.Objects()
		if err != nil {
			return
		}
		require.NotEmpty(t, objs)
		d, err := s.Build()
		require.NoError(t, err)
		require.NoError(t, ls.CheckEnv("studio", envMap(studioContainer(t, d))), "what renders is what Label Studio reads")
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if strings.Contains(e.Name, "PASSWORD") || strings.Contains(e.Name, "TOKEN") {
				require.Empty(t, e.Value, e.Name)
			}
			if e.Name == "LABEL_STUDIO_HOST" {
				u, err := url.Parse(e.Value)
				require.NoError(t, err)
				require.Nil(t, u.User, "a credential in LABEL_STUDIO_HOST")
			}
		}
	})
}

// FuzzBackendPredict: any /predict body is answered, never a panic.
func FuzzBackendPredict(f *testing.F) {
	x, _ := label.NamedEntities("PER").XML()
	f.Add(`{"tasks": [{"id": 1, "data": {"text": "Zoë joined Tencent."}}], "label_config": ` + strconv.Quote(x) + `}`)
	f.Add(`{"tasks": [{"data": {"text": 7}}], "label_config": "<View/>"}`)
	m := labeltest.NewModel("qwen", answer, nil)
	f.Cleanup(m.Close)
	chat, err := inference.NewClient(m.URL)
	require.NoError(f, err)
	b, err := label.NewBackend(chat)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, body string) {
		rec := httptest.NewRecorder()
		b.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/predict", strings.NewReader(body)))
		require.Contains(t, []int{200, 400, 500}, rec.Code)
	})
}

// FuzzValueJSON: result values decode or fail, and what decodes encodes
// to JSON that decodes to the same value.
func FuzzValueJSON(f *testing.F) {
	f.Add(`{"start": 0, "end": 3, "text": "Zoë", "labels": ["PER"]}`)
	f.Add(`{"text": ["a", "b"]}`)
	f.Add(`{"x": 1, "y": 2, "width": 3, "height": 4, "rectanglelabels": ["car"]}`)
	f.Fuzz(func(t *testing.T, in string) {
		var v label.Value
		if json.Unmarshal([]byte(in), &v) != nil {
			return
		}
		out, err := json.Marshal(v)
		require.NoError(t, err)
		var back label.Value
		require.NoError(t, json.Unmarshal(out, &back))
		again, err := json.Marshal(back)
		require.NoError(t, err)
		require.JSONEq(t, string(out), string(again))
	})
}

// FuzzURLCredentials: a URL holding a password, in any shape, is refused
// or accepted by every URL cube takes, and a refusal never repeats the
// password.
func FuzzURLCredentials(f *testing.F) {
	for _, u := range hostileURLs {
		before, after, _ := strings.Cut(u, "user:s3cr3t@")
		f.Add(before, after)
	}
	f.Fuzz(func(t *testing.T, before, after string) {
		const secret = "s3cr3t"
		if strings.Contains(before+after, secret[:3]) {
			return
		}
		u := before + "user:" + secret + "@" + after
		c, err := label.NewClient("http://studio:8080", label.Token("t"))
		require.NoError(t, err)
		var errs []error
		_, err = label.NewClient(u, label.Token("t"))
		errs = append(errs, err)
		_, err = label.Studio("labels").Admin(pod.SecretKeyRef{Name: "admin", Key: "email"}, pod.SecretKeyRef{Name: "admin", Key: "pw"}).Token(pod.SecretKeyRef{Name: "admin", Key: "token"}).Host(u).Objects()
		errs = append(errs, err)
		_, err = label.MLBackend("b", "img").Model(u, "m").Objects()
		errs = append(errs, err)
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // nothing is sent: only the checks run
		errs = append(errs, c.ConnectBackend(ctx, 1, "b", u, false))
		_, err = c.CreateWebhook(ctx, label.Webhook{Project: 1, URL: u, SendForAllActions: true})
		errs = append(errs, err)
		_, err = c.ConnectS3(ctx, label.S3Storage{Project: 1, Bucket: "data", RegexFilter: ".*", S3Endpoint: u})
		errs = append(errs, err)
		for i, err := range errs {
			if err != nil {
				require.NotContains(t, err.Error(), secret, "%d: %q", i, u)
			}
		}
	})
}
