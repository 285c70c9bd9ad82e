package label

import (
	"encoding/json"
	"fmt"
)

// The JSON shapes of Label Studio's REST API at 1.13.1: the fields of its
// Project, Task, Annotation, Prediction, Webhook and S3 storage
// serializers that cube uses, and the result format of its JSON export.
// Each was checked against the types of label-studio-sdk 1.0.5
// (.mock/definition/__package__.yml, projects.yml, tasks.yml,
// predictions.yml, webhooks.yml, ml.yml, importStorage/s3.yml: the API
// definition generated from Label Studio in August 2024, the release
// nearest 1.13.1) and, where the server's own source could be read, against
// it (see doc.go for which files and versions).

// Project is a labeling project.
type Project struct {
	ID          int    `json:"id,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	LabelConfig string `json:"label_config,omitempty"`
	// TaskNumber is how many tasks the project holds (read-only).
	TaskNumber int    `json:"task_number,omitempty"`
	CreatedAt  string `json:"created_at,omitempty"`
}

// Task is one item to label; Data holds the values the config's object
// tags read ("$text" reads Data["text"]).
type Task struct {
	ID          int            `json:"id,omitempty"`
	Project     int            `json:"project,omitempty"`
	Data        map[string]any `json:"data"`
	Annotations []Annotation   `json:"annotations,omitempty"`
	Predictions []Prediction   `json:"predictions,omitempty"`
}

// Text returns Data[key] as a string ("" if it is missing or not a string).
func (t Task) Text(key string) string {
	s, _ := t.Data[key].(string)
	return s
}

// Annotation is a person's labeling of a task.
type Annotation struct {
	ID   int `json:"id,omitempty"`
	Task int `json:"task,omitempty"`
	// CompletedBy is the annotator's user id.
	CompletedBy  int      `json:"completed_by,omitempty"`
	Result       []Result `json:"result"`
	WasCancelled bool     `json:"was_cancelled,omitempty"`
	// GroundTruth marks the annotation a reviewer accepted.
	GroundTruth bool    `json:"ground_truth,omitempty"`
	LeadTime    float64 `json:"lead_time,omitempty"`
	UpdatedAt   string  `json:"updated_at,omitempty"`
}

// Prediction is a model's pre-annotation of a task, shown to annotators.
// Score orders tasks in the Data Manager (lowest first); Label Studio
// stores null for a prediction made without one, which reads as 0.
type Prediction struct {
	ID           int      `json:"id,omitempty"`
	Task         int      `json:"task,omitempty"`
	Result       []Result `json:"result"`
	Score        float64  `json:"score"`
	ModelVersion string   `json:"model_version,omitempty"`
}

// Result is one region or choice of an annotation or prediction.
type Result struct {
	ID       string `json:"id,omitempty"`
	FromName string `json:"from_name"`
	ToName   string `json:"to_name"`
	Type     string `json:"type"`
	Value    Value  `json:"value"`
	// Score is the model's confidence in this result (predictions only).
	Score          *float64 `json:"score,omitempty"`
	OriginalWidth  int      `json:"original_width,omitempty"`
	OriginalHeight int      `json:"original_height,omitempty"`
}

// Value is a result's value; which fields are set depends on the type.
type Value struct {
	Choices         []string // choices
	Labels          []string // labels (text spans)
	RectangleLabels []string // rectanglelabels
	// Start and End are character offsets of a text span, Span its text.
	Start, End *int
	Span       string
	// Box is a rectangle in percent of the image (rectanglelabels).
	Box *Box
	// Rating is a Rating's stars.
	Rating int
	// Lines is a TextArea's text, one entry per submitted line.
	Lines []string
	// Selected is "left" or "right" (pairwise).
	Selected string
}

// Box is a rectangle in percent of the image's width and height.
type Box struct {
	X, Y, Width, Height, Rotation float64
}

// MarshalJSON writes the keys Label Studio writes for the result type:
// "text" is a string for spans and a list for TextArea.
func (v Value) MarshalJSON() ([]byte, error) {
	m := map[string]any{}
	if v.Choices != nil {
		m["choices"] = v.Choices
	}
	if v.Labels != nil {
		m["labels"] = v.Labels
	}
	if v.RectangleLabels != nil {
		m["rectanglelabels"] = v.RectangleLabels
	}
	if v.Start != nil {
		m["start"] = *v.Start
	}
	if v.End != nil {
		m["end"] = *v.End
	}
	if v.Span != "" {
		m["text"] = v.Span
	}
	if v.Lines != nil {
		m["text"] = v.Lines
	}
	if b := v.Box; b != nil {
		m["x"], m["y"], m["width"], m["height"], m["rotation"] = b.X, b.Y, b.Width, b.Height, b.Rotation
	}
	if v.Rating != 0 {
		m["rating"] = v.Rating
	}
	if v.Selected != "" {
		m["selected"] = v.Selected
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *Value) UnmarshalJSON(b []byte) error {
	var raw struct {
		Choices         []string        `json:"choices"`
		Labels          []string        `json:"labels"`
		RectangleLabels []string        `json:"rectanglelabels"`
		Start           *int            `json:"start"`
		End             *int            `json:"end"`
		Text            json.RawMessage `json:"text"`
		X               *float64        `json:"x"`
		Y               *float64        `json:"y"`
		Width           *float64        `json:"width"`
		Height          *float64        `json:"height"`
		Rotation        float64         `json:"rotation"`
		Rating          int             `json:"rating"`
		Selected        string          `json:"selected"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*v = Value{Choices: raw.Choices, Labels: raw.Labels, RectangleLabels: raw.RectangleLabels,
		Start: raw.Start, End: raw.End, Rating: raw.Rating, Selected: raw.Selected}
	if len(raw.Text) > 0 && string(raw.Text) != "null" {
		if raw.Text[0] == '[' {
			if err := json.Unmarshal(raw.Text, &v.Lines); err != nil {
				return fmt.Errorf("value.text: %w", err)
			}
		} else if err := json.Unmarshal(raw.Text, &v.Span); err != nil {
			return fmt.Errorf("value.text: %w", err)
		}
	}
	if raw.X != nil && raw.Y != nil && raw.Width != nil && raw.Height != nil {
		v.Box = &Box{X: *raw.X, Y: *raw.Y, Width: *raw.Width, Height: *raw.Height, Rotation: raw.Rotation}
	}
	return nil
}

// Webhook is a URL Label Studio calls on project events
// (label_studio/webhooks/models.py Webhook). Label Studio's own defaults
// for SendPayload, SendForAllActions and IsActive are true; the fields
// here are always sent, so a Webhook created without IsActive is inactive
// and one without SendPayload sends the action only.
type Webhook struct {
	ID                int    `json:"id,omitempty"`
	Project           int    `json:"project,omitempty"`
	URL               string `json:"url"`
	SendPayload       bool   `json:"send_payload"`
	SendForAllActions bool   `json:"send_for_all_actions"`
	// Headers are sent with every call: at most 10, named with letters,
	// digits, - and _ (HEADERS_SCHEMA).
	Headers  map[string]string `json:"headers,omitempty"`
	IsActive bool              `json:"is_active"`
	// Actions are the events sent when SendForAllActions is false, such as
	// ANNOTATION_CREATED or ANNOTATIONS_DELETED (WebhookAction); a project's
	// webhook cannot have PROJECT_CREATED or PROJECT_DELETED.
	Actions []string `json:"actions,omitempty"`
}

// ImportResult is what POST /api/projects/{id}/import answers
// (label_studio/data_import/api.py ImportAPI.create). The server writes
// "prediction_count", although the OpenAPI schema beside it, and the SDK
// generated from that, call it "predictions_count"; the code is what
// counts. The counts are null when the import is not committed to the
// project, and read as 0 here.
type ImportResult struct {
	TaskCount       int     `json:"task_count"`
	AnnotationCount int     `json:"annotation_count"`
	PredictionCount int     `json:"prediction_count"`
	Duration        float64 `json:"duration"`
}

// Accepted returns the annotation that counts for the task: the one marked
// ground truth, otherwise the last one not cancelled. ok is false when the
// task has none.
func (t Task) Accepted() (Annotation, bool) {
	var last *Annotation
	for i := range t.Annotations {
		a := &t.Annotations[i]
		if a.WasCancelled {
			continue
		}
		if a.GroundTruth {
			return *a, true
		}
		last = a
	}
	if last == nil {
		return Annotation{}, false
	}
	return *last, true
}

// Find returns the first result of the control named fromName.
func Find(results []Result, fromName string) (Result, bool) {
	for _, r := range results {
		if r.FromName == fromName {
			return r, true
		}
	}
	return Result{}, false
}

// S3Storage is an S3 (or S3-compatible) import storage: Label Studio lists
// the bucket and makes a task of each object (label_studio/io_storages/s3,
// openapi_schema.py). It carries no credentials: give the Studio's pod
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY with EnvFromSecret (or a
// workload identity), which boto3 in Label Studio finds when the storage
// names no keys.
type S3Storage struct {
	ID      int    `json:"id,omitempty"`
	Project int    `json:"project"`
	Title   string `json:"title,omitempty"`
	Bucket  string `json:"bucket"`
	Prefix  string `json:"prefix,omitempty"`
	// RegexFilter selects the objects to import; Label Studio imports
	// none without it.
	RegexFilter string `json:"regex_filter"`
	// UseBlobURLs makes each object a URL in the task's data (images,
	// audio) instead of reading it as JSON tasks.
	UseBlobURLs   bool   `json:"use_blob_urls"`
	Presign       bool   `json:"presign"`
	PresignTTL    int    `json:"presign_ttl,omitempty"`
	RecursiveScan bool   `json:"recursive_scan,omitempty"`
	RegionName    string `json:"region_name,omitempty"`
	S3Endpoint    string `json:"s3_endpoint,omitempty"`
}
