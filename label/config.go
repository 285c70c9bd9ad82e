package label

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TagKind is the name of a Label Studio tag. The names and attributes are
// those of Label Studio's tag reference (docs/source/tags/*.md at 1.13.1:
// view.md, header.md, text.md, image.md, choices.md, choice.md, labels.md,
// label.md, rectanglelabels.md, pairwise.md, rating.md, textarea.md).
type TagKind string

// The tags a Config renders and parses.
const (
	// Object tags show the task's data: value is "$key" of task.data.
	TagText  TagKind = "Text"
	TagImage TagKind = "Image"
	// TagHeader is a visual heading; it has no name.
	TagHeader TagKind = "Header"
	// Control tags produce results for the object named in toName.
	TagChoices         TagKind = "Choices"
	TagLabels          TagKind = "Labels"
	TagRectangleLabels TagKind = "RectangleLabels"
	TagPairwise        TagKind = "Pairwise"
	TagRating          TagKind = "Rating"
	TagTextArea        TagKind = "TextArea"
)

// Choice modes of a Choices tag (its choice attribute).
const (
	Single   = "single"
	Multiple = "multiple"
)

// Tag is one object or control tag of a labeling configuration.
type Tag struct {
	Kind TagKind
	// Name is the tag's name attribute, which results carry as from_name
	// (controls) or to_name (objects).
	Name string
	// Value is the data key of an object tag ("$text") or a Header's text.
	Value string
	// ToName names the object(s) a control labels; Pairwise names two.
	ToName []string
	// Options are the Choice or Label values of a Choices, Labels or
	// RectangleLabels tag.
	Options []string
	// Choice is Single or Multiple, for Choices.
	Choice string
	// MaxRating is a Rating's maxRating (default 5).
	MaxRating int
}

// IsControl reports whether the tag produces results.
func (t Tag) IsControl() bool {
	switch t.Kind {
	case TagChoices, TagLabels, TagRectangleLabels, TagPairwise, TagRating, TagTextArea:
		return true
	}
	return false
}

// ResultType is the type of the results a control produces ("choices",
// "labels", "rectanglelabels", "pairwise", "rating", "textarea"): the tag
// name in lower case, as Label Studio writes it.
func (t Tag) ResultType() string { return strings.ToLower(string(t.Kind)) }

// DataKey is the task.data key an object tag shows ("text" for "$text").
func (t Tag) DataKey() string { return strings.TrimPrefix(t.Value, "$") }

// Config is a Label Studio labeling configuration: an ordered list of tags
// inside <View>. Build one with the presets (TextClassification,
// NamedEntities, PairwiseRanking…) or NewConfig and its methods; XML
// validates and renders it. Methods never fail; a nil *Config is reported
// by XML.
type Config struct {
	tags []Tag
}

// NewConfig returns an empty configuration.
func NewConfig() *Config { return &Config{} }

func (c *Config) add(t Tag) *Config {
	if c == nil {
		return nil
	}
	t.ToName = slices.Clone(t.ToName)
	t.Options = slices.Clone(t.Options)
	c.tags = append(c.tags, t)
	return c
}

// Header adds a heading.
func (c *Config) Header(text string) *Config { return c.add(Tag{Kind: TagHeader, Value: text}) }

// Text adds a Text object named name showing task.data[key].
func (c *Config) Text(name, key string) *Config {
	return c.add(Tag{Kind: TagText, Name: name, Value: "$" + key})
}

// Image adds an Image object named name showing the URL in task.data[key].
func (c *Config) Image(name, key string) *Config {
	return c.add(Tag{Kind: TagImage, Name: name, Value: "$" + key})
}

// Choices adds a Choices control over toName; mode is Single or Multiple.
func (c *Config) Choices(name, toName, mode string, options ...string) *Config {
	return c.add(Tag{Kind: TagChoices, Name: name, ToName: []string{toName}, Choice: mode, Options: options})
}

// Labels adds a Labels control (text spans) over toName.
func (c *Config) Labels(name, toName string, labels ...string) *Config {
	return c.add(Tag{Kind: TagLabels, Name: name, ToName: []string{toName}, Options: labels})
}

// RectangleLabels adds a RectangleLabels control (boxes) over an image.
func (c *Config) RectangleLabels(name, toName string, labels ...string) *Config {
	return c.add(Tag{Kind: TagRectangleLabels, Name: name, ToName: []string{toName}, Options: labels})
}

// Pairwise adds a Pairwise control choosing between the objects left and
// right; its result says "left" or "right".
func (c *Config) Pairwise(name, left, right string) *Config {
	return c.add(Tag{Kind: TagPairwise, Name: name, ToName: []string{left, right}})
}

// Rating adds a Rating control of 1..maxRating stars over toName.
func (c *Config) Rating(name, toName string, maxRating int) *Config {
	return c.add(Tag{Kind: TagRating, Name: name, ToName: []string{toName}, MaxRating: maxRating})
}

// TextArea adds a free-text control over toName.
func (c *Config) TextArea(name, toName string) *Config {
	return c.add(Tag{Kind: TagTextArea, Name: name, ToName: []string{toName}})
}

// Tags returns a copy of the configuration's tags, in order.
func (c *Config) Tags() []Tag {
	if c == nil {
		return nil
	}
	out := make([]Tag, len(c.tags))
	for i, t := range c.tags {
		t.ToName, t.Options = slices.Clone(t.ToName), slices.Clone(t.Options)
		out[i] = t
	}
	return out
}

// Control returns the control tag named name.
func (c *Config) Control(name string) (Tag, bool) {
	for _, t := range c.Tags() {
		if t.IsControl() && t.Name == name {
			return t, true
		}
	}
	return Tag{}, false
}

// Object returns the object tag named name.
func (c *Config) Object(name string) (Tag, bool) {
	for _, t := range c.Tags() {
		if !t.IsControl() && t.Kind != TagHeader && t.Name == name {
			return t, true
		}
	}
	return Tag{}, false
}

// Presets: the configurations of Label Studio's templates for each task,
// with fixed tag names and data keys so that exports know where to look.

// TextClassification labels task.data.text with one of classes.
func TextClassification(classes ...string) *Config {
	return NewConfig().Text("text", "text").Choices("label", "text", Single, classes...)
}

// MultiLabel labels task.data.text with any of classes.
func MultiLabel(classes ...string) *Config {
	return NewConfig().Text("text", "text").Choices("labels", "text", Multiple, classes...)
}

// NamedEntities marks spans of task.data.text with entity types.
func NamedEntities(types ...string) *Config {
	return NewConfig().Text("text", "text").Labels("entities", "text", types...)
}

// QuestionAnswering marks the span of task.data.context that answers
// task.data.question.
func QuestionAnswering() *Config {
	return NewConfig().Text("question", "question").Text("context", "context").Labels("answer", "context", "Answer")
}

// ImageClassification labels the image at task.data.image with one of classes.
func ImageClassification(classes ...string) *Config {
	return NewConfig().Image("image", "image").Choices("label", "image", Single, classes...)
}

// ImageBoxes draws labelled boxes on the image at task.data.image.
func ImageBoxes(classes ...string) *Config {
	return NewConfig().Image("image", "image").RectangleLabels("boxes", "image", classes...)
}

// PairwiseRanking asks which of two model answers (task.data.answer_a,
// task.data.answer_b) to task.data.prompt is better: the source of
// preference pairs (PreferencePairs).
func PairwiseRanking() *Config {
	return NewConfig().Text("prompt", "prompt").Text("answer_a", "answer_a").Text("answer_b", "answer_b").
		Pairwise("preference", "answer_a", "answer_b")
}

// ResponseRating rates task.data.response to task.data.prompt from 1 to
// maxRating and takes a free-text correction: the source of KTO labels
// (KTO) and of SFT data (SFT, from the correction or the response).
func ResponseRating(maxRating int) *Config {
	return NewConfig().Text("prompt", "prompt").Text("response", "response").
		Rating("rating", "response", maxRating).TextArea("correction", "response")
}

// nameRe is what cube accepts as a tag name: Label Studio refers to names
// in results and in toName lists (comma-separated), so commas, spaces and
// markup are refused.
var nameRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,62}$`)

// Validate checks the configuration: every tag has a valid, unique name;
// object tags name a data key; controls name existing objects of the kind
// they label in toName; options are present and unique. Every problem is
// returned, with the tag's path (tags[2].toName).
func (c *Config) Validate() error {
	if c == nil {
		return errors.New("label: the *Config is nil: make one with NewConfig or a preset")
	}
	return c.validate().ToAggregate()
}

func (c *Config) validate() field.ErrorList {
	var errs field.ErrorList
	tags := field.NewPath("tags")
	if len(c.tags) == 0 {
		return field.ErrorList{field.Required(tags, "a configuration needs at least one object and one control")}
	}
	objects := map[string]TagKind{}
	seen := map[string]bool{}
	controls := 0
	for i, t := range c.tags {
		p := tags.Index(i)
		if t.Kind == TagHeader {
			continue
		}
		switch {
		case !nameRe.MatchString(t.Name):
			errs = append(errs, field.Invalid(p.Child("name"), t.Name, "must start with a letter or _ and hold only letters, digits, _ . - (at most 63)"))
		case seen[t.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), t.Name))
		}
		seen[t.Name] = true
		if t.IsControl() {
			controls++
			continue
		}
		switch t.Kind {
		case TagText, TagImage:
			if !nameRe.MatchString(t.DataKey()) || !strings.HasPrefix(t.Value, "$") {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, "must be $key of task.data"))
			}
			objects[t.Name] = t.Kind
		default:
			errs = append(errs, field.NotSupported(p.Child("kind"), string(t.Kind), allKinds))
		}
	}
	if controls == 0 {
		errs = append(errs, field.Required(tags, "at least one control tag (Choices, Labels, RectangleLabels, Pairwise, Rating, TextArea) is required"))
	}
	for i, t := range c.tags {
		if !t.IsControl() {
			continue
		}
		p := tags.Index(i)
		want := 1
		if t.Kind == TagPairwise {
			want = 2
		}
		if len(t.ToName) != want {
			errs = append(errs, field.Invalid(p.Child("toName"), strings.Join(t.ToName, ","), fmt.Sprintf("%s labels %d object(s)", t.Kind, want)))
		}
		for j, to := range t.ToName {
			kind, ok := objects[to]
			switch {
			case !ok:
				errs = append(errs, field.NotFound(p.Child("toName").Index(j), to))
			case t.Kind == TagRectangleLabels && kind != TagImage:
				errs = append(errs, field.Invalid(p.Child("toName").Index(j), to, "RectangleLabels labels an Image"))
			case (t.Kind == TagLabels || t.Kind == TagPairwise) && kind != TagText:
				errs = append(errs, field.Invalid(p.Child("toName").Index(j), to, string(t.Kind)+" labels a Text"))
			}
		}
		if t.Kind == TagPairwise && len(t.ToName) == 2 && t.ToName[0] == t.ToName[1] {
			errs = append(errs, field.Duplicate(p.Child("toName").Index(1), t.ToName[1]))
		}
		switch t.Kind {
		case TagChoices, TagLabels, TagRectangleLabels:
			if len(t.Options) == 0 {
				errs = append(errs, field.Required(p.Child("options"), "at least one value"))
			}
			have := map[string]bool{}
			for j, o := range t.Options {
				switch {
				case strings.TrimSpace(o) == "" || strings.TrimSpace(o) != o:
					errs = append(errs, field.Invalid(p.Child("options").Index(j), o, "must be non-empty without leading or trailing spaces"))
				case strings.Contains(o, ","):
					// Label Studio splits the values of a result's filter on commas.
					errs = append(errs, field.Invalid(p.Child("options").Index(j), o, "must not contain a comma"))
				case have[o]:
					errs = append(errs, field.Duplicate(p.Child("options").Index(j), o))
				case !xmlText(o):
					errs = append(errs, field.Invalid(p.Child("options").Index(j), o, "must be valid UTF-8 without control characters"))
				}
				have[o] = true
			}
		}
		if t.Kind == TagChoices && t.Choice != Single && t.Choice != Multiple {
			errs = append(errs, field.NotSupported(p.Child("choice"), t.Choice, []string{Single, Multiple}))
		}
		if t.Kind == TagRating && (t.MaxRating < 1 || t.MaxRating > 100) {
			errs = append(errs, field.Invalid(p.Child("maxRating"), t.MaxRating, "must be between 1 and 100"))
		}
	}
	for i, t := range c.tags {
		if t.Kind == TagHeader && !xmlText(t.Value) {
			errs = append(errs, field.Invalid(tags.Index(i).Child("value"), t.Value, "must be valid UTF-8 without control characters"))
		}
	}
	return errs
}

var allKinds = []string{string(TagText), string(TagImage), string(TagHeader), string(TagChoices), string(TagLabels),
	string(TagRectangleLabels), string(TagPairwise), string(TagRating), string(TagTextArea)}

// xmlText reports whether s survives an XML round trip unchanged.
func xmlText(s string) bool {
	for _, r := range s {
		if r == '\uFFFD' || (r < 0x20 && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}

// node is any XML element, for rendering and parsing with encoding/xml.
type node struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Children []node     `xml:",any"`
}

func attr(name, value string) xml.Attr { return xml.Attr{Name: xml.Name{Local: name}, Value: value} }

// XML validates the configuration and renders it as Label Studio's
// label_config.
func (c *Config) XML() (string, error) {
	if err := c.Validate(); err != nil {
		return "", err
	}
	view := node{XMLName: xml.Name{Local: "View"}}
	for _, t := range c.tags {
		n := node{XMLName: xml.Name{Local: string(t.Kind)}}
		switch t.Kind {
		case TagHeader:
			n.Attrs = []xml.Attr{attr("value", t.Value)}
		case TagText, TagImage:
			n.Attrs = []xml.Attr{attr("name", t.Name), attr("value", t.Value)}
		default:
			n.Attrs = []xml.Attr{attr("name", t.Name), attr("toName", strings.Join(t.ToName, ","))}
		}
		switch t.Kind {
		case TagChoices:
			n.Attrs = append(n.Attrs, attr("choice", t.Choice))
			for _, o := range t.Options {
				n.Children = append(n.Children, node{XMLName: xml.Name{Local: "Choice"}, Attrs: []xml.Attr{attr("value", o)}})
			}
		case TagLabels, TagRectangleLabels:
			for _, o := range t.Options {
				n.Children = append(n.Children, node{XMLName: xml.Name{Local: "Label"}, Attrs: []xml.Attr{attr("value", o)}})
			}
		case TagRating:
			n.Attrs = append(n.Attrs, attr("maxRating", strconv.Itoa(t.MaxRating)))
		}
		view.Children = append(view.Children, n)
	}
	out, err := xml.MarshalIndent(view, "", "  ")
	if err != nil {
		return "", fmt.Errorf("render label config: %w", err)
	}
	return string(out), nil
}

// maxConfigBytes bounds what ParseConfig reads.
const maxConfigBytes = 1 << 20

// configSyntaxError says what is wrong with a label_config encoding/xml
// could not decode, under the field's name: empty, cut short inside an
// element (which it names), or not XML, where the decoder says only "EOF"
// or "unexpected EOF".
func configSyntaxError(label string, err error) *field.Error {
	p := field.NewPath("label_config")
	if strings.TrimSpace(label) == "" {
		return field.Required(p, "empty: a labeling configuration is a <View> of object and control tags")
	}
	if errors.Is(err, io.EOF) {
		return field.Invalid(p, truncate(label), "no <View> element: a labeling configuration is a <View> of object and control tags")
	}
	var syntax *xml.SyntaxError
	if errors.As(err, &syntax) && strings.Contains(syntax.Msg, "unexpected EOF") {
		if open := openElements(label); len(open) > 0 {
			return field.Invalid(p, truncate(label), fmt.Sprintf("truncated: <%s> is not closed", strings.Join(open, "> in <")))
		}
		return field.Invalid(p, truncate(label), "truncated inside a tag")
	}
	return field.Invalid(p, truncate(label), err.Error())
}

// openElements lists the elements still open where label ends or stops
// parsing, innermost first.
func openElements(label string) []string {
	dec := xml.NewDecoder(strings.NewReader(label))
	var open []string
	for {
		tok, err := dec.Token()
		if err != nil {
			slices.Reverse(open)
			return open
		}
		switch t := tok.(type) {
		case xml.StartElement:
			open = append(open, t.Name.Local)
		case xml.EndElement:
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
}

// ParseConfig reads a label_config back into a Config, keeping the tags
// cube knows and refusing the rest by name, and validates it. Nested
// <View> elements (layout) are flattened.
func ParseConfig(label string) (*Config, error) {
	if len(label) > maxConfigBytes {
		return nil, fmt.Errorf("parse label config: %d bytes is more than %d", len(label), maxConfigBytes)
	}
	var root node
	dec := xml.NewDecoder(bytes.NewReader([]byte(label)))
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("parse label config: %w", configSyntaxError(label, err))
	}
	if root.XMLName.Local != "View" {
		return nil, fmt.Errorf("parse label config: the root is <%s>, not <View>", root.XMLName.Local)
	}
	c := NewConfig()
	var errs field.ErrorList
	var walk func(n node, p *field.Path, depth int)
	walk = func(n node, p *field.Path, depth int) {
		for i, child := range n.Children {
			cp := p.Index(i)
			get := func(name string) string {
				for _, a := range child.Attrs {
					if a.Name.Local == name {
						return a.Value
					}
				}
				return ""
			}
			kind := TagKind(child.XMLName.Local)
			t := Tag{Kind: kind, Name: get("name"), Value: get("value")}
			if to := get("toName"); to != "" {
				t.ToName = strings.Split(to, ",")
			}
			switch kind {
			case "View":
				if depth > 8 {
					errs = append(errs, field.TooMany(cp, depth, 8))
					continue
				}
				walk(child, cp.Child("children"), depth+1)
				continue
			case TagHeader, TagText, TagImage, TagPairwise, TagTextArea:
			case TagRating:
				t.MaxRating = 5
				if m := get("maxRating"); m != "" {
					v, err := strconv.Atoi(m)
					if err != nil {
						errs = append(errs, field.Invalid(cp.Child("maxRating"), m, "not an integer"))
					}
					t.MaxRating = v
				}
			case TagChoices, TagLabels, TagRectangleLabels:
				want := "Label"
				if kind == TagChoices {
					want = "Choice"
					t.Choice = get("choice")
					if t.Choice == "" || t.Choice == "single-radio" {
						t.Choice = Single
					}
				}
				for j, o := range child.Children {
					if o.XMLName.Local != want {
						errs = append(errs, field.NotSupported(cp.Child("children").Index(j), o.XMLName.Local, []string{want}))
						continue
					}
					i := slices.IndexFunc(o.Attrs, func(a xml.Attr) bool { return a.Name.Local == "value" })
					if i < 0 {
						// Dropping it would change the options silently.
						errs = append(errs, field.Required(cp.Child("children").Index(j).Child("value"), "a "+want+" needs a value"))
						continue
					}
					t.Options = append(t.Options, o.Attrs[i].Value)
				}
			default:
				errs = append(errs, field.NotSupported(cp, string(kind), allKinds))
				continue
			}
			c.add(t)
		}
	}
	walk(root, field.NewPath("View", "children"), 0)
	if len(errs) > 0 {
		return nil, fmt.Errorf("parse label config: %w", errs.ToAggregate())
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("parse label config: %w", err)
	}
	return c, nil
}
