package label

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"

	"github.com/cubestudio/cube/inference"
)

// undecided is the score of a result whose model gave no confidence.
const undecided = 0.5

// Predict pre-annotates tasks for cfg: one prediction per task, in order,
// with a result per control the model could answer.
func (b *Backend) Predict(ctx context.Context, cfg *Config, tasks []Task) ([]Prediction, error) {
	if !b.usable() {
		return nil, errNilBackend
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("predict: %w", err)
	}
	out := make([]Prediction, len(tasks))
	var errs []error
	for i, t := range tasks {
		p, err := b.predictTask(ctx, cfg, t)
		if err != nil {
			errs = append(errs, fmt.Errorf("predict task %d: %w", t.ID, err))
			if ctx.Err() != nil {
				break
			}
		}
		p.Task = t.ID
		out[i] = p
	}
	return out, errors.Join(errs...)
}

func (b *Backend) predictTask(ctx context.Context, cfg *Config, t Task) (p Prediction, err error) {
	p = Prediction{Result: []Result{}}
	// After the calls: the served model is known once the first is made.
	defer func() { p.ModelVersion = b.Version(ctx) }()
	var data strings.Builder
	for _, tag := range cfg.Tags() {
		if tag.Kind == TagText {
			fmt.Fprintf(&data, "%s: %s\n", tag.Name, t.Text(tag.DataKey()))
		}
	}
	var scores []float64
	for _, ctl := range cfg.Tags() {
		if !ctl.IsControl() {
			continue
		}
		obj, _ := cfg.Object(ctl.ToName[0])
		if obj.Kind != TagText {
			continue // image controls: a chat model does not see the image
		}
		text := t.Text(obj.DataKey())
		var rs []Result
		switch ctl.Kind {
		case TagChoices:
			rs, err = b.choices(ctx, ctl, text, data.String())
		case TagLabels:
			rs, err = b.spans(ctx, ctl, text, data.String())
		case TagTextArea, TagRating, TagPairwise:
			rs, err = b.free(ctx, ctl, data.String())
		}
		if err != nil {
			return p, fmt.Errorf("%s %q: %w", ctl.Kind, ctl.Name, err)
		}
		for _, r := range rs {
			if r.Score != nil {
				scores = append(scores, *r.Score)
			}
		}
		p.Result = append(p.Result, rs...)
	}
	if len(scores) > 0 {
		for _, s := range scores {
			p.Score += s
		}
		p.Score /= float64(len(scores))
	}
	return p, nil
}

func result(ctl Tag, v Value, score float64) Result {
	s := math.Max(0, math.Min(1, score))
	return Result{FromName: ctl.Name, ToName: ctl.ToName[0], Type: ctl.ResultType(), Value: v, Score: &s}
}

// ask sends the prompt and decodes the first JSON object of the answer
// into out.
func (b *Backend) ask(ctx context.Context, prompt string, out any) error {
	resp, err := b.chat.Chat(ctx,
		inference.SystemMessage("You pre-annotate data for human reviewers. Answer with one JSON object and nothing else."),
		inference.UserMessage(prompt))
	if err != nil {
		return err
	}
	if len(resp.Choices) == 0 {
		return errors.New("the model sent no choices")
	}
	content := resp.Choices[0].Message.Content
	start, end := strings.Index(content, "{"), strings.LastIndex(content, "}")
	if start < 0 || end < start {
		return fmt.Errorf("the model's answer holds no JSON object: %q", truncate(content))
	}
	if err := json.Unmarshal([]byte(content[start:end+1]), out); err != nil {
		return fmt.Errorf("the model's answer is not the JSON asked for: %w: %q", err, truncate(content))
	}
	return nil
}

func truncate(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

func canonical(options []string, v string) (string, bool) {
	for _, o := range options {
		if strings.EqualFold(strings.TrimSpace(v), o) {
			return o, true
		}
	}
	return "", false
}

func (b *Backend) choices(ctx context.Context, ctl Tag, text, data string) ([]Result, error) {
	if b.embed != nil {
		return b.nearest(ctx, ctl, text)
	}
	var ans struct {
		Choices []string `json:"choices"`
		Score   *float64 `json:"score"`
	}
	how := "exactly one"
	if ctl.Choice == Multiple {
		how = "every one that applies"
	}
	prompt := fmt.Sprintf("Choose %s of these labels for %q: %s.\n%s\nAnswer as {\"choices\": [...], \"score\": <confidence 0..1>}.",
		how, ctl.ToName[0], strings.Join(quoteAll(ctl.Options), ", "), data)
	if err := b.ask(ctx, prompt, &ans); err != nil {
		return nil, err
	}
	var picked []string
	for _, c := range ans.Choices {
		if o, ok := canonical(ctl.Options, c); ok && !slices.Contains(picked, o) {
			picked = append(picked, o)
		}
	}
	if len(picked) == 0 || (ctl.Choice != Multiple && len(picked) > 1) {
		return nil, nil // nothing usable: leave it to the annotator
	}
	return []Result{result(ctl, Value{Choices: picked}, scoreOr(ans.Score))}, nil
}

func scoreOr(s *float64) float64 {
	if s == nil || math.IsNaN(*s) {
		return undecided
	}
	return *s
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// nearest picks the option whose embedding is nearest the text's.
func (b *Backend) nearest(ctx context.Context, ctl Tag, text string) ([]Result, error) {
	vecs, err := b.embed.Embed(ctx, append([]string{text}, ctl.Options...)...)
	if err != nil {
		return nil, err
	}
	best, bestSim := -1, -2.0
	for i, v := range vecs[1:] {
		if s := cosine(vecs[0], v); s > bestSim {
			best, bestSim = i, s
		}
	}
	if best < 0 {
		return nil, nil
	}
	return []Result{result(ctl, Value{Choices: []string{ctl.Options[best]}}, bestSim)}, nil
}

func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return -1
	}
	var dot, na, nb float64
	for i := range a {
		dot += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	if na == 0 || nb == 0 {
		return -1
	}
	return dot / math.Sqrt(na*nb)
}

func (b *Backend) spans(ctx context.Context, ctl Tag, text, data string) ([]Result, error) {
	var ans struct {
		Spans []struct {
			Text  string   `json:"text"`
			Label string   `json:"label"`
			Score *float64 `json:"score"`
		} `json:"spans"`
	}
	prompt := fmt.Sprintf("Mark the spans of %q to label with one of %s, quoting each span exactly as it appears.\n%s\nAnswer as {\"spans\": [{\"text\": ..., \"label\": ..., \"score\": <confidence 0..1>}]}.",
		ctl.ToName[0], strings.Join(quoteAll(ctl.Options), ", "), data)
	if err := b.ask(ctx, prompt, &ans); err != nil {
		return nil, err
	}
	var out []Result
	from := 0
	for _, s := range ans.Spans {
		lbl, ok := canonical(ctl.Options, s.Label)
		if !ok || s.Text == "" {
			continue
		}
		at := strings.Index(text[from:], s.Text)
		if at < 0 {
			if at = strings.Index(text, s.Text); at < 0 {
				continue // not in the text: the model made it up
			}
		} else {
			at += from
		}
		from = at + len(s.Text)
		start, end := utf16Len(text[:at]), utf16Len(text[:at+len(s.Text)])
		out = append(out, result(ctl, Value{Start: &start, End: &end, Span: s.Text, Labels: []string{lbl}}, scoreOr(s.Score)))
	}
	return out, nil
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

func (b *Backend) free(ctx context.Context, ctl Tag, data string) ([]Result, error) {
	switch ctl.Kind {
	case TagTextArea:
		var ans struct {
			Text  string   `json:"text"`
			Score *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Write the best %s for %q.\n%s\nAnswer as {\"text\": ..., \"score\": <confidence 0..1>}.", ctl.Name, ctl.ToName[0], data), &ans); err != nil {
			return nil, err
		}
		if strings.TrimSpace(ans.Text) == "" {
			return nil, nil
		}
		return []Result{result(ctl, Value{Lines: []string{ans.Text}}, scoreOr(ans.Score))}, nil
	case TagRating:
		var ans struct {
			Rating int      `json:"rating"`
			Score  *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Rate %q from 1 to %d.\n%s\nAnswer as {\"rating\": <1..%d>, \"score\": <confidence 0..1>}.", ctl.ToName[0], ctl.MaxRating, data, ctl.MaxRating), &ans); err != nil {
			return nil, err
		}
		if ans.Rating < 1 || ans.Rating > ctl.MaxRating {
			return nil, nil
		}
		return []Result{result(ctl, Value{Rating: ans.Rating}, scoreOr(ans.Score))}, nil
	default: // TagPairwise
		var ans struct {
			Selected string   `json:"selected"`
			Score    *float64 `json:"score"`
		}
		if err := b.ask(ctx, fmt.Sprintf("Which is better, %q (left) or %q (right)?\n%s\nAnswer as {\"selected\": \"left\" or \"right\", \"score\": <confidence 0..1>}.", ctl.ToName[0], ctl.ToName[1], data), &ans); err != nil {
			return nil, err
		}
		if ans.Selected != "left" && ans.Selected != "right" {
			return nil, nil
		}
		return []Result{result(ctl, Value{Selected: ans.Selected}, scoreOr(ans.Score))}, nil
	}
}
