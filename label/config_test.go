package label_test

import (
	"encoding/xml"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/label"
)

// The expected XML uses Label Studio's tag and attribute names as its tag
// reference documents them (docs/source/tags/*.md at 1.13.1).
func TestPresetsRenderLabelStudioTags(t *testing.T) {
	cases := map[string]struct {
		cfg  *label.Config
		want string
	}{
		"text classification": {label.TextClassification("positive", "negative"), `<View>
  <Text name="text" value="$text"></Text>
  <Choices name="label" toName="text" choice="single">
    <Choice value="positive"></Choice>
    <Choice value="negative"></Choice>
  </Choices>
</View>`},
		"multi-label": {label.MultiLabel("a", "b"), `<View>
  <Text name="text" value="$text"></Text>
  <Choices name="labels" toName="text" choice="multiple">
    <Choice value="a"></Choice>
    <Choice value="b"></Choice>
  </Choices>
</View>`},
		"entities": {label.NamedEntities("PER", "ORG"), `<View>
  <Text name="text" value="$text"></Text>
  <Labels name="entities" toName="text">
    <Label value="PER"></Label>
    <Label value="ORG"></Label>
  </Labels>
</View>`},
		"qa": {label.QuestionAnswering(), `<View>
  <Text name="question" value="$question"></Text>
  <Text name="context" value="$context"></Text>
  <Labels name="answer" toName="context">
    <Label value="Answer"></Label>
  </Labels>
</View>`},
		"image classification": {label.ImageClassification("cat"), `<View>
  <Image name="image" value="$image"></Image>
  <Choices name="label" toName="image" choice="single">
    <Choice value="cat"></Choice>
  </Choices>
</View>`},
		"boxes": {label.ImageBoxes("bike"), `<View>
  <Image name="image" value="$image"></Image>
  <RectangleLabels name="boxes" toName="image">
    <Label value="bike"></Label>
  </RectangleLabels>
</View>`},
		"pairwise": {label.PairwiseRanking(), `<View>
  <Text name="prompt" value="$prompt"></Text>
  <Text name="answer_a" value="$answer_a"></Text>
  <Text name="answer_b" value="$answer_b"></Text>
  <Pairwise name="preference" toName="answer_a,answer_b"></Pairwise>
</View>`},
		"rating": {label.ResponseRating(5), `<View>
  <Text name="prompt" value="$prompt"></Text>
  <Text name="response" value="$response"></Text>
  <Rating name="rating" toName="response" maxRating="5"></Rating>
  <TextArea name="correction" toName="response"></TextArea>
</View>`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.cfg.XML()
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			back, err := label.ParseConfig(got)
			require.NoError(t, err)
			assert.Equal(t, tc.cfg.Tags(), back.Tags())
		})
	}
}

func TestConfigValidationNamesEveryField(t *testing.T) {
	cfg := label.NewConfig().Text("text", "text").Text("text", "bad key").
		Choices("a,b", "missing", "some", "x", "x", "").
		Labels("spans", "img", "PER").Image("img", "image").
		Pairwise("pw", "text", "text").Rating("stars", "text", 0)
	_, err := cfg.XML()
	require.Error(t, err)
	for _, want := range []string{
		`tags[1].name: Duplicate value: "text"`,
		`tags[1].value: Invalid value: "$bad key"`,
		`tags[2].name: Invalid value: "a,b"`,
		`tags[2].toName[0]: Not found: "missing"`,
		`tags[2].options[1]: Duplicate value: "x"`,
		`tags[2].options[2]: Invalid value: ""`,
		`tags[2].choice: Unsupported value: "some"`,
		`tags[3].toName[0]: Invalid value: "img": Labels labels a Text`,
		`tags[5].toName[1]: Duplicate value: "text"`,
		`tags[6].maxRating: Invalid value: 0`,
	} {
		assert.ErrorContains(t, err, want)
	}
	var nilCfg *label.Config
	_, err = nilCfg.Text("a", "b").XML()
	assert.ErrorContains(t, err, "the *Config is nil")
	_, err = (&label.Config{}).XML()
	assert.ErrorContains(t, err, "tags: Required value")
	_, err = label.NewConfig().Text("text", "text").XML()
	assert.ErrorContains(t, err, "at least one control tag")
}

func TestParseConfig(t *testing.T) {
	// A config written in Label Studio's UI: nested Views, a Header, a
	// default choice mode and a Rating without maxRating.
	cfg, err := label.ParseConfig(`<View><Header value="Rate it"/><View style="x"><Text name="t" value="$body"/></View>
<Choices name="c" toName="t"><Choice value="ok"/></Choices><Rating name="r" toName="t"/></View>`)
	require.NoError(t, err)
	c, ok := cfg.Control("c")
	require.True(t, ok)
	assert.Equal(t, label.Single, c.Choice)
	r, _ := cfg.Control("r")
	assert.Equal(t, 5, r.MaxRating)
	o, ok := cfg.Object("t")
	require.True(t, ok)
	assert.Equal(t, "body", o.DataKey())

	for in, want := range map[string]string{
		`<View><Video name="v" value="$v"/></View>`: `Unsupported value: "Video"`,
		`<Root/>`:                           "the root is <Root>",
		`<View><Text name="t" value="$t"/>`: "parse label config",
		`<View><Text name="t" value="$t"/><Choices name="c" toName="t"><Label value="x"/></Choices></View>`: `Unsupported value: "Label"`,
		`<View><Text name="t" value="$t"/><Rating name="r" toName="t" maxRating="x"/></View>`:               `maxRating: Invalid value: "x"`,
	} {
		_, err := label.ParseConfig(in)
		assert.ErrorContains(t, err, want, in)
	}
	_, err = label.ParseConfig(strings.Repeat(" ", 2<<20))
	assert.ErrorContains(t, err, "bytes is more than")
}

// labelStudioTags are the tags and attributes cube renders, each from the
// "Parameters" table of its page in Label Studio's tag reference
// (docs/source/tags/<tag>.md at 1.13.1).
var labelStudioTags = map[string][]string{
	"View":            {},
	"Header":          {"value"},
	"Text":            {"name", "value"},
	"Image":           {"name", "value"},
	"Choices":         {"name", "toName", "choice"},
	"Choice":          {"value"},
	"Labels":          {"name", "toName"},
	"Label":           {"value"},
	"RectangleLabels": {"name", "toName"},
	"Pairwise":        {"name", "toName"},
	"Rating":          {"name", "toName", "maxRating"},
	"TextArea":        {"name", "toName"},
}

// TestRenderedNamesAreLabelStudios walks the XML of every preset and
// builder method and checks each element and attribute name against the
// tag reference.
func TestRenderedNamesAreLabelStudios(t *testing.T) {
	cfgs := []*label.Config{
		label.TextClassification("a"), label.MultiLabel("a"), label.NamedEntities("a"), label.QuestionAnswering(),
		label.ImageClassification("a"), label.ImageBoxes("a"), label.PairwiseRanking(), label.ResponseRating(3),
		label.NewConfig().Header("h").Text("t", "t").TextArea("x", "t"),
	}
	seen := map[string]bool{}
	for _, cfg := range cfgs {
		x, err := cfg.XML()
		require.NoError(t, err)
		dec := xml.NewDecoder(strings.NewReader(x))
		for {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			se, ok := tok.(xml.StartElement)
			if !ok {
				continue
			}
			attrs, known := labelStudioTags[se.Name.Local]
			require.True(t, known, "tag %s", se.Name.Local)
			seen[se.Name.Local] = true
			for _, a := range se.Attr {
				assert.Contains(t, attrs, a.Name.Local, "%s@%s", se.Name.Local, a.Name.Local)
			}
		}
	}
	assert.Len(t, seen, len(labelStudioTags), "every tag is rendered by some builder")
}
