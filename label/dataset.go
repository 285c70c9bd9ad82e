package label

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/datasets"
)

// The records of the datasets llm trains on, in the shapes
// LLaMA-Factory's data/README.md (v0.9.5) gives and llm's dataset_info.json
// entries name (llm renders a datasets.Dataset): Alpaca's instruction,
// input, output, system, chosen, rejected; ShareGPT's conversations of {from, value}
// (from: human, gpt) with chosen and rejected messages; and the boolean
// "label" column of KTO data (kto_tag → "label" in datasets.KTOData).

// AlpacaRecord is one Alpaca record.
type AlpacaRecord struct {
	Instruction string `json:"instruction"`
	Input       string `json:"input"`
	Output      string `json:"output,omitempty"`
	System      string `json:"system,omitempty"`
	Chosen      string `json:"chosen,omitempty"`
	Rejected    string `json:"rejected,omitempty"`
	// Label is KTO's desirable (true) or undesirable (false).
	Label *bool `json:"label,omitempty"`
}

// Message is one turn of a ShareGPT conversation.
type Message struct {
	From  string `json:"from"`
	Value string `json:"value"`
}

// ShareGPT roles (LLaMA-Factory's default user_tag and assistant_tag).
const (
	FromHuman = "human"
	FromGPT   = "gpt"
)

// ShareGPTRecord is one ShareGPT record.
type ShareGPTRecord struct {
	Conversations []Message `json:"conversations"`
	System        string    `json:"system,omitempty"`
	Chosen        *Message  `json:"chosen,omitempty"`
	Rejected      *Message  `json:"rejected,omitempty"`
	Label         *bool     `json:"label,omitempty"`
}

// Records is a dataset exported from accepted annotations: the records
// of one format (Alpaca or ShareGPT), what they teach, and the tasks left
// out with the reason.
type Records struct {
	Format   datasets.Format
	Kind     datasets.Kind
	Alpaca   []AlpacaRecord
	ShareGPT []ShareGPTRecord
	// Skipped maps a task id to why it gave no record.
	Skipped map[int]string
}

// Len is the number of records.
func (r *Records) Len() int {
	if r == nil {
		return 0
	}
	return len(r.Alpaca) + len(r.ShareGPT)
}

// WriteJSON writes the records as one JSON list, the .json file
// LLaMA-Factory reads.
func (r *Records) WriteJSON(w io.Writer) error {
	if r == nil {
		return errors.New("label: the *Records is nil")
	}
	if w == nil {
		return fmt.Errorf("write %s dataset: nil writer", r.Format)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	var v any = r.Alpaca
	if r.Format == datasets.ShareGPT {
		v = r.ShareGPT
	}
	if r.Len() == 0 {
		v = []struct{}{}
	}
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write %s dataset: %w", r.Format, err)
	}
	return nil
}

// Dataset names the records for llm once they are written to source
// (pvc://claim/path/file.json, s3://…): a datasets.InstructionData,
// PreferenceData or KTOData of the records' format.
func (r *Records) Dataset(name, source string) datasets.Dataset {
	if r == nil {
		// No format and no kind: llm refuses it, naming both, when the
		// fine-tune is built.
		return datasets.Dataset{Name: name, Source: source}
	}
	switch r.Kind {
	case datasets.Preferences:
		return datasets.PreferenceData(name, source, r.Format)
	case datasets.KTOLabels:
		return datasets.KTOData(name, source, r.Format)
	}
	return datasets.InstructionData(name, source, r.Format)
}

func newRecords(f datasets.Format, k datasets.Kind) (*Records, error) {
	if f != datasets.Alpaca && f != datasets.ShareGPT {
		return nil, fmt.Errorf("export %s: format %q: must be datasets.Alpaca or datasets.ShareGPT", k, f)
	}
	return &Records{Format: f, Kind: k, Skipped: map[int]string{}}, nil
}

// ResponseFields says where SFT and KTO find a prompt, the model's
// response and the annotator's verdict. The zero value reads the
// ResponseRating preset: data keys prompt and response, controls rating
// and correction, desirable from 4 stars.
type ResponseFields struct {
	PromptKey, InputKey, ResponseKey string
	// Rating is the Rating control; responses rated MinRating or more are
	// desirable.
	Rating    string
	MinRating int
	// Correction is the TextArea control an annotator rewrites the
	// response in.
	Correction string
	// System is the system prompt of every record.
	System string
}

func (f ResponseFields) validate() error {
	if f.MinRating < 0 {
		// Every rating, 0 included, would pass: every response desirable.
		return field.Invalid(field.NewPath("minRating"), f.MinRating, "must not be negative (0 is the default, 4)")
	}
	return nil
}

func (f ResponseFields) withDefaults() ResponseFields {
	if f.PromptKey == "" {
		f.PromptKey = "prompt"
	}
	if f.ResponseKey == "" {
		f.ResponseKey = "response"
	}
	if f.Rating == "" {
		f.Rating = "rating"
	}
	if f.MinRating == 0 {
		f.MinRating = 4
	}
	if f.Correction == "" {
		f.Correction = "correction"
	}
	return f
}

type verdict struct {
	prompt, input, response, correction string
	rating                              int
}

func (f ResponseFields) read(t Task) (verdict, string) {
	a, ok := t.Accepted()
	if !ok {
		return verdict{}, "no accepted annotation"
	}
	v := verdict{prompt: t.Text(f.PromptKey), response: t.Text(f.ResponseKey)}
	if f.InputKey != "" {
		v.input = t.Text(f.InputKey)
	}
	if strings.TrimSpace(v.prompt) == "" {
		return v, fmt.Sprintf("data.%s is empty", f.PromptKey)
	}
	if r, ok := Find(a.Result, f.Correction); ok {
		v.correction = strings.TrimSpace(strings.Join(r.Value.Lines, "\n"))
	}
	if r, ok := Find(a.Result, f.Rating); ok {
		v.rating = r.Value.Rating
	}
	return v, ""
}

func (r *Records) add(system string, v verdict, output string, label *bool) {
	if r.Format == datasets.Alpaca {
		r.Alpaca = append(r.Alpaca, AlpacaRecord{Instruction: v.prompt, Input: v.input, Output: output, System: system, Label: label})
		return
	}
	human := v.prompt
	if v.input != "" {
		human += "\n" + v.input
	}
	r.ShareGPT = append(r.ShareGPT, ShareGPTRecord{System: system, Label: label,
		Conversations: []Message{{From: FromHuman, Value: human}, {From: FromGPT, Value: output}}})
}

// SFT exports instruction data from accepted annotations: the
// annotator's correction when there is one, otherwise the model's
// response if it was rated MinRating or more.
func SFT(tasks []Task, format datasets.Format, fields ResponseFields) (*Records, error) {
	r, err := newRecords(format, datasets.Instructions)
	if err != nil {
		return nil, err
	}
	if err := fields.validate(); err != nil {
		return nil, fmt.Errorf("export %s: %w", datasets.Instructions, err)
	}
	f := fields.withDefaults()
	for _, t := range tasks {
		v, why := f.read(t)
		switch {
		case why != "":
			r.Skipped[t.ID] = why
		case v.correction != "":
			r.add(f.System, v, v.correction, nil)
		case v.rating >= f.MinRating && strings.TrimSpace(v.response) != "":
			r.add(f.System, v, v.response, nil)
		default:
			r.Skipped[t.ID] = fmt.Sprintf("rated %d (below %d) without a correction", v.rating, f.MinRating)
		}
	}
	return r, nil
}

// KTO exports KTO labels: each rated response is desirable when rated
// MinRating or more and undesirable otherwise; an annotator's correction
// is one more desirable response.
func KTO(tasks []Task, format datasets.Format, fields ResponseFields) (*Records, error) {
	r, err := newRecords(format, datasets.KTOLabels)
	if err != nil {
		return nil, err
	}
	if err := fields.validate(); err != nil {
		return nil, fmt.Errorf("export %s: %w", datasets.KTOLabels, err)
	}
	f := fields.withDefaults()
	for _, t := range tasks {
		v, why := f.read(t)
		if why == "" && v.rating == 0 && v.correction == "" {
			why = "neither rated nor corrected"
		}
		if why != "" {
			r.Skipped[t.ID] = why
			continue
		}
		if v.rating != 0 && strings.TrimSpace(v.response) != "" {
			good := v.rating >= f.MinRating
			r.add(f.System, v, v.response, &good)
		}
		if v.correction != "" {
			good := true
			r.add(f.System, v, v.correction, &good)
		}
	}
	return r, nil
}

// PairFields says where PreferencePairs finds the prompt, the two answers
// and the Pairwise control. The zero value reads the PairwiseRanking
// preset: prompt, answer_a, answer_b, preference.
type PairFields struct {
	PromptKey, LeftKey, RightKey string
	Control                      string
	System                       string
}

// PreferencePairs exports chosen/rejected pairs from the accepted
// Pairwise annotations: the selected answer ("left" is LeftKey) is chosen.
func PreferencePairs(tasks []Task, format datasets.Format, fields PairFields) (*Records, error) {
	r, err := newRecords(format, datasets.Preferences)
	if err != nil {
		return nil, err
	}
	f := fields
	f.PromptKey = cmp.Or(f.PromptKey, "prompt")
	f.LeftKey = cmp.Or(f.LeftKey, "answer_a")
	f.RightKey = cmp.Or(f.RightKey, "answer_b")
	f.Control = cmp.Or(f.Control, "preference")
	for _, t := range tasks {
		a, ok := t.Accepted()
		if !ok {
			r.Skipped[t.ID] = "no accepted annotation"
			continue
		}
		res, ok := Find(a.Result, f.Control)
		prompt, left, right := t.Text(f.PromptKey), t.Text(f.LeftKey), t.Text(f.RightKey)
		switch {
		case !ok:
			r.Skipped[t.ID] = fmt.Sprintf("no %s result", f.Control)
			continue
		case prompt == "" || left == "" || right == "":
			r.Skipped[t.ID] = fmt.Sprintf("data.%s, data.%s and data.%s are required", f.PromptKey, f.LeftKey, f.RightKey)
			continue
		}
		chosen, rejected := left, right
		switch res.Value.Selected {
		case "left":
		case "right":
			chosen, rejected = right, left
		default:
			r.Skipped[t.ID] = fmt.Sprintf("selected %q, not left or right", res.Value.Selected)
			continue
		}
		if r.Format == datasets.Alpaca {
			r.Alpaca = append(r.Alpaca, AlpacaRecord{Instruction: prompt, System: f.System, Chosen: chosen, Rejected: rejected})
			continue
		}
		r.ShareGPT = append(r.ShareGPT, ShareGPTRecord{System: f.System,
			Conversations: []Message{{From: FromHuman, Value: prompt}},
			Chosen:        &Message{From: FromGPT, Value: chosen}, Rejected: &Message{From: FromGPT, Value: rejected}})
	}
	return r, nil
}
