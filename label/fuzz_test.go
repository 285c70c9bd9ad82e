package label_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/cubestudio/cube/label"
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
		back, err := label.ParseConfig(x)
		require.NoError(t, err, x)
		require.Equal(t, cfg.Tags(), back.Tags())
	})
}
