package label

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/cubestudio/cube/internal/urlcheck"
)

// The length a project's title may have (PROJECT_TITLE_MIN_LEN and
// PROJECT_TITLE_MAX_LEN of label_studio/core/settings/base.py, the
// validators of Project.title in label_studio/projects/models.py; "Must be
// between 3 and 50 characters long" in label-studio-sdk 1.0.5's Project).
// An empty title is allowed: Label Studio does not check a blank one.
const (
	minProjectTitle = 3
	maxProjectTitle = 50
)

func validateTitle(title string) field.ErrorList {
	if n := utf8.RuneCountInString(title); title != "" && (n < minProjectTitle || n > maxProjectTitle) {
		return field.ErrorList{field.Invalid(field.NewPath("title"), title,
			fmt.Sprintf("must be between %d and %d characters long", minProjectTitle, maxProjectTitle))}
	}
	return nil
}

// CreateProject creates a project with the rendered labeling config.
func (c *Client) CreateProject(ctx context.Context, title, description string, config *Config) (Project, error) {
	errs := validateTitle(title)
	if config != nil {
		errs = append(errs, config.validate()...)
	}
	if len(errs) > 0 {
		return Project{}, fmt.Errorf("label studio create project: %w", errs.ToAggregate())
	}
	xmlConfig, err := config.XML()
	if err != nil {
		return Project{}, fmt.Errorf("label studio create project: %w", err)
	}
	var p Project
	err = c.do(ctx, "create project", http.MethodPost, "/api/projects/", nil,
		Project{Title: title, Description: description, LabelConfig: xmlConfig}, &p)
	return p, err
}

// GetProject returns the project with id.
func (c *Client) GetProject(ctx context.Context, id int) (Project, error) {
	var p Project
	err := c.do(ctx, "get project", http.MethodGet, "/api/projects/"+strconv.Itoa(id)+"/", nil, nil, &p)
	return p, err
}

// ProjectConfig returns the project's labeling config, parsed.
func (c *Client) ProjectConfig(ctx context.Context, id int) (*Config, error) {
	p, err := c.GetProject(ctx, id)
	if err != nil {
		return nil, err
	}
	return ParseConfig(p.LabelConfig)
}

// ListProjects returns every project, following the pages of
// GET /api/projects/ ({count, next, previous, results}).
func (c *Client) ListProjects(ctx context.Context) ([]Project, error) {
	var all []Project
	for page := 1; ; page++ {
		var resp struct {
			Count   int       `json:"count"`
			Next    *string   `json:"next"`
			Results []Project `json:"results"`
		}
		q := url.Values{"page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(c.pageSizeOr())}}
		if err := c.do(ctx, "list projects", http.MethodGet, "/api/projects/", q, nil, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Results...)
		if resp.Next == nil || len(resp.Results) == 0 {
			return all, nil
		}
	}
}

func (c *Client) pageSizeOr() int {
	if c == nil || c.pageSize < 1 {
		return 100
	}
	return c.pageSize
}

// UpdateProject changes the title, description and (when config is not
// nil) the labeling config of a project; empty strings are left unchanged.
func (c *Client) UpdateProject(ctx context.Context, id int, title, description string, config *Config) (Project, error) {
	patch := Project{Title: title, Description: description}
	errs := validateTitle(title)
	if config != nil {
		errs = append(errs, config.validate()...)
	}
	if len(errs) > 0 {
		return Project{}, fmt.Errorf("label studio update project: %w", errs.ToAggregate())
	}
	if config != nil {
		x, err := config.XML()
		if err != nil {
			return Project{}, fmt.Errorf("label studio update project: %w", err)
		}
		patch.LabelConfig = x
	}
	var p Project
	err := c.do(ctx, "update project", http.MethodPatch, "/api/projects/"+strconv.Itoa(id)+"/", nil, patch, &p)
	return p, err
}

// DeleteProject deletes a project and its tasks.
func (c *Client) DeleteProject(ctx context.Context, id int) error {
	return c.do(ctx, "delete project", http.MethodDelete, "/api/projects/"+strconv.Itoa(id)+"/", nil, nil, nil)
}

// ImportTasks imports tasks as JSON (POST /api/projects/{id}/import with a
// list of {data, predictions, annotations}). Data values may be URLs
// (http, s3://, gs://) for Label Studio to resolve through its storages;
// a URL with a password in it is refused (it would be stored and shown to
// every annotator), without repeating the password.
func (c *Client) ImportTasks(ctx context.Context, project int, tasks []Task) (ImportResult, error) {
	if len(tasks) == 0 {
		return ImportResult{}, fmt.Errorf("label studio import tasks: %w", field.Required(field.NewPath("tasks"), "nothing to import"))
	}
	var errs field.ErrorList
	for i, t := range tasks {
		p := field.NewPath("tasks").Index(i).Child("data")
		if len(t.Data) == 0 {
			errs = append(errs, field.Required(p, ""))
		}
		for _, k := range sortedKeys(t.Data) {
			// Label Studio stores the data and shows it to every
			// annotator: a password in a URL there (s3://key:secret@…)
			// would be readable by all of them. Storages hold credentials.
			s, _ := t.Data[k].(string)
			hasPassword := urlcheck.HasUserinfo(s) // parsed or not
			if u, err := url.Parse(s); err == nil {
				_, hasPassword = u.User.Password()
			}
			if hasPassword {
				errs = append(errs, field.Invalid(p.Key(k), urlcheck.Redact(s), "must not carry credentials: connect a storage (ConnectS3) instead"))
			}
		}
	}
	if len(errs) > 0 {
		return ImportResult{}, fmt.Errorf("label studio import tasks: %w", errs.ToAggregate())
	}
	var r ImportResult
	err := c.do(ctx, "import tasks", http.MethodPost, "/api/projects/"+strconv.Itoa(project)+"/import", nil, tasks, &r)
	return r, err
}

// ListTasks returns every task of a project with its annotations and
// predictions (fields=all), following the pages of GET /api/tasks/?project=
// ({tasks, total, total_annotations, total_predictions}: TasksListResponse
// of label-studio-sdk 1.0.5's .mock/definition/tasks.yml; the path is
// api/tasks/ in label_studio/tasks/urls.py).
func (c *Client) ListTasks(ctx context.Context, project int) ([]Task, error) {
	var all []Task
	for page := 1; ; page++ {
		var resp struct {
			Tasks []Task `json:"tasks"`
			Total int    `json:"total"`
		}
		q := url.Values{"project": {strconv.Itoa(project)}, "fields": {"all"}, "page": {strconv.Itoa(page)}, "page_size": {strconv.Itoa(c.pageSizeOr())}}
		if err := c.do(ctx, "list tasks", http.MethodGet, "/api/tasks/", q, nil, &resp); err != nil {
			return nil, err
		}
		all = append(all, resp.Tasks...)
		if len(resp.Tasks) == 0 || len(all) >= resp.Total {
			return all, nil
		}
	}
}

// CreatePrediction adds a pre-annotation to a task, with the model version
// and score Label Studio shows and filters by.
func (c *Client) CreatePrediction(ctx context.Context, p Prediction) (Prediction, error) {
	var errs field.ErrorList
	if p.Task == 0 {
		errs = append(errs, field.Required(field.NewPath("task"), ""))
	}
	if !finite(p.Score) {
		// Label Studio orders tasks by it; JSON cannot carry it.
		errs = append(errs, field.Invalid(field.NewPath("score"), p.Score, "must be a finite number"))
	}
	errs = append(errs, validateResults(field.NewPath("result"), p.Result)...)
	if len(errs) > 0 {
		return Prediction{}, fmt.Errorf("label studio create prediction: %w", errs.ToAggregate())
	}
	var out Prediction
	err := c.do(ctx, "create prediction", http.MethodPost, "/api/predictions/", nil, p, &out)
	return out, err
}

// CreateAnnotation adds an annotation to a task.
func (c *Client) CreateAnnotation(ctx context.Context, task int, a Annotation) (Annotation, error) {
	if errs := validateResults(field.NewPath("result"), a.Result); len(errs) > 0 {
		return Annotation{}, fmt.Errorf("label studio create annotation: %w", errs.ToAggregate())
	}
	var out Annotation
	err := c.do(ctx, "create annotation", http.MethodPost, "/api/tasks/"+strconv.Itoa(task)+"/annotations/", nil, a, &out)
	return out, err
}

// Export returns every task of a project with its annotations and
// predictions in Label Studio's JSON export (GET
// /api/projects/{id}/export?exportType=JSON&download_all_tasks=true:
// label_studio/data_export/api.py ExportAPI reads exportType, or
// export_type, and download_all_tasks through ExportParamSerializer, and
// answers a file holding the JSON list of tasks). Convert it with SFT,
// PreferencePairs and KTO.
func (c *Client) Export(ctx context.Context, project int) ([]Task, error) {
	var tasks []Task
	q := url.Values{"exportType": {"JSON"}, "download_all_tasks": {"true"}}
	err := c.do(ctx, "export", http.MethodGet, "/api/projects/"+strconv.Itoa(project)+"/export", q, nil, &tasks)
	return tasks, err
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// validateResults refuses the numbers JSON cannot carry (NaN, ±Inf) in
// results, by field, before encoding/json refuses them without saying
// where.
func validateResults(p *field.Path, results []Result) field.ErrorList {
	var errs field.ErrorList
	for i, r := range results {
		rp := p.Index(i)
		if r.Score != nil && !finite(*r.Score) {
			errs = append(errs, field.Invalid(rp.Child("score"), *r.Score, "must be a finite number"))
		}
		if b := r.Value.Box; b != nil {
			for _, f := range []struct {
				name string
				v    float64
			}{{"x", b.X}, {"y", b.Y}, {"width", b.Width}, {"height", b.Height}, {"rotation", b.Rotation}} {
				if !finite(f.v) {
					errs = append(errs, field.Invalid(rp.Child("value", f.name), f.v, "must be a finite number"))
				}
			}
		}
	}
	return errs
}
