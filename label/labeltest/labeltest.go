package labeltest

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/cubestudio/cube/label"
)

// Server is a running stand-in Label Studio.
type Server struct {
	*httptest.Server
	// Token is the access token requests must carry.
	Token string

	mu       sync.Mutex
	nextID   int
	projects map[int]*label.Project
	tasks    []*label.Task
	webhooks []label.Webhook
	storages []label.S3Storage
	backends []map[string]any
	failures map[string]int
	requests []string
}

// NewServer starts a stand-in Label Studio that accepts token. Close it
// when done.
func NewServer(token string) *Server {
	s := &Server{Token: token, nextID: 1, projects: map[int]*label.Project{}, failures: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	return s
}

// FailNext makes the next n requests to path ("/api/projects/") answer 503,
// to exercise retries.
func (s *Server) FailNext(path string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[path] = n
}

// Requests returns "METHOD path" of every request served so far.
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Backends returns what each POST /api/ml/ connected, without the
// password (basic_auth_pass_is_set tells whether one was sent).
func (s *Server) Backends() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.backends)
}

func (s *Server) id() int { s.nextID++; return s.nextID - 1 }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// fail answers in the shape of custom_exception_handler
// (label_studio/core/utils/common.py).
func fail(w http.ResponseWriter, status int, detail string, validation map[string][]string) {
	body := map[string]any{"id": "stand-in", "status_code": status, "version": "1.13.1", "detail": detail, "exc_info": nil}
	if validation != nil {
		body["validation_errors"] = validation
	}
	writeJSON(w, status, body)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r.Method+" "+r.URL.Path)
	if n := s.failures[r.URL.Path]; n > 0 {
		s.failures[r.URL.Path] = n - 1
		fail(w, http.StatusServiceUnavailable, "Service Unavailable", nil)
		return
	}
	if r.Header.Get("Authorization") != "Token "+s.Token {
		fail(w, http.StatusUnauthorized, "Authentication credentials were not provided.", nil)
		return
	}
	if !routes.MatchString(r.URL.Path) {
		fail(w, http.StatusNotFound, "Not found.", nil)
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case parts[1] == "projects" && len(parts) == 2:
		s.projectsList(w, r)
	case parts[1] == "projects" && len(parts) >= 3:
		id, err := strconv.Atoi(parts[2])
		p, ok := s.projects[id]
		if err != nil || !ok {
			fail(w, http.StatusNotFound, "No Project matches the given query.", nil)
			return
		}
		switch {
		case len(parts) == 3:
			s.project(w, r, p)
		case parts[3] == "import" && r.Method == http.MethodPost:
			s.importTasks(w, r, p)
		case parts[3] == "export" && r.Method == http.MethodGet:
			if r.URL.Query().Get("exportType") != "JSON" {
				fail(w, http.StatusBadRequest, "stand-in exports JSON only", nil)
				return
			}
			out := []label.Task{}
			for _, t := range s.tasks {
				if t.Project == p.ID {
					out = append(out, *t)
				}
			}
			writeJSON(w, http.StatusOK, out)
		default:
			fail(w, http.StatusNotFound, "Not found.", nil)
		}
	case parts[1] == "tasks" && len(parts) == 2 && r.Method == http.MethodGet:
		s.tasksList(w, r)
	case parts[1] == "tasks" && len(parts) == 4 && parts[3] == "annotations" && r.Method == http.MethodPost:
		id, _ := strconv.Atoi(parts[2])
		t := s.task(id)
		if t == nil {
			fail(w, http.StatusNotFound, "No Task matches the given query.", nil)
			return
		}
		var a label.Annotation
		if !decode(w, r, &a) {
			return
		}
		a.ID, a.Task = s.id(), t.ID
		t.Annotations = append(t.Annotations, a)
		writeJSON(w, http.StatusCreated, a)
	case parts[1] == "predictions" && r.Method == http.MethodPost:
		var p label.Prediction
		if !decode(w, r, &p) {
			return
		}
		t := s.task(p.Task)
		if t == nil {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"task": {fmt.Sprintf("Invalid pk \"%d\" - object does not exist.", p.Task)}})
			return
		}
		p.ID = s.id()
		t.Predictions = append(t.Predictions, p)
		writeJSON(w, http.StatusCreated, p)
	case parts[1] == "webhooks":
		s.webhook(w, r, parts)
	case parts[1] == "storages" && len(parts) == 3 && parts[2] == "s3" && r.Method == http.MethodPost:
		var st label.S3Storage
		if !decode(w, r, &st) {
			return
		}
		if _, ok := s.projects[st.Project]; !ok {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"project": {fmt.Sprintf("Invalid pk \"%d\" - object does not exist.", st.Project)}})
			return
		}
		st.ID = s.id()
		s.storages = append(s.storages, st)
		writeJSON(w, http.StatusCreated, st)
	case parts[1] == "storages" && len(parts) == 5 && parts[2] == "s3" && parts[4] == "sync" && r.Method == http.MethodPost:
		// The stand-in reads no bucket: a sync answers the storage as
		// Label Studio does and imports nothing.
		id, _ := strconv.Atoi(parts[3])
		for _, st := range s.storages {
			if st.ID == id {
				writeJSON(w, http.StatusOK, st)
				return
			}
		}
		fail(w, http.StatusNotFound, "Not found.", nil)
	case parts[1] == "ml" && r.Method == http.MethodPost:
		s.connectBackend(w, r)
	default:
		fail(w, http.StatusNotFound, "Not found.", nil)
	}
}

// routes are the paths the stand-in answers, spelled as Label Studio's
// urls.py files write them (projects/urls.py, data_import/urls.py,
// data_export/urls.py, tasks/urls.py, webhooks/urls.py, io_storages/urls.py,
// ml/urls.py), trailing slash included or not. Label Studio itself also
// resolves a path missing its slash (CommonMiddlewareAppendSlashWithoutRedirect
// in core/middleware.py); the stand-in answers 404 instead, so a client
// that misspells a path fails here.
var routes = regexp.MustCompile(`^/api/(projects/(\d+/(import|export)?)?|tasks/(\d+/annotations/)?|predictions/|webhooks/(\d+/)?|storages/s3/(\d+/sync)?|ml/)$`)

// mlBackendRequest holds the fields POST /api/ml/ takes (MlCreateRequest
// of label-studio-sdk 1.0.5's .mock/definition/ml.yml); anything else is
// refused, so a misnamed field fails here.
type mlBackendRequest struct {
	URL           string         `json:"url"`
	Project       int            `json:"project"`
	IsInteractive bool           `json:"is_interactive"`
	Title         string         `json:"title"`
	Description   string         `json:"description"`
	AuthMethod    string         `json:"auth_method"`
	BasicAuthUser string         `json:"basic_auth_user"`
	BasicAuthPass string         `json:"basic_auth_pass"`
	ExtraParams   map[string]any `json:"extra_params"`
	Timeout       int            `json:"timeout"`
}

func (s *Server) connectBackend(w http.ResponseWriter, r *http.Request) {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	var req mlBackendRequest
	if err := dec.Decode(&req); err != nil {
		fail(w, http.StatusBadRequest, "JSON parse error - "+err.Error(), nil)
		return
	}
	errs := map[string][]string{}
	if req.URL == "" {
		errs["url"] = []string{"This field is required."}
	}
	if _, ok := s.projects[req.Project]; !ok {
		errs["project"] = []string{fmt.Sprintf("Invalid pk \"%d\" - object does not exist.", req.Project)}
	}
	if req.AuthMethod != "" && req.AuthMethod != "NONE" && req.AuthMethod != "BASIC_AUTH" {
		errs["auth_method"] = []string{fmt.Sprintf("\"%s\" is not a valid choice.", req.AuthMethod)}
	}
	if len(errs) > 0 {
		fail(w, http.StatusBadRequest, "Validation error", errs)
		return
	}
	// Backends() shows what was sent, the password aside: Label Studio's
	// serializer never answers it either.
	b := map[string]any{"id": s.id(), "url": req.URL, "project": req.Project, "is_interactive": req.IsInteractive,
		"title": req.Title, "auth_method": req.AuthMethod, "basic_auth_user": req.BasicAuthUser,
		"basic_auth_pass_is_set": req.BasicAuthPass != ""}
	s.backends = append(s.backends, b)
	writeJSON(w, http.StatusCreated, b)
}

func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		fail(w, http.StatusBadRequest, "JSON parse error - "+err.Error(), nil)
		return false
	}
	return true
}

func (s *Server) task(id int) *label.Task {
	for _, t := range s.tasks {
		if t.ID == id {
			return t
		}
	}
	return nil
}

// titleProblem is what Django's MinLengthValidator and MaxLengthValidator
// on Project.title (3 and 50, label_studio/projects/models.py) say of
// title; a blank title is not checked.
func titleProblem(title string) string {
	switch n := utf8.RuneCountInString(title); {
	case title == "":
		return ""
	case n < 3:
		return fmt.Sprintf("Ensure this value has at least 3 characters (it has %d).", n)
	case n > 50:
		return fmt.Sprintf("Ensure this value has at most 50 characters (it has %d).", n)
	}
	return ""
}

func validConfig(x string) bool {
	var root struct{ XMLName xml.Name }
	return xml.Unmarshal([]byte(x), &root) == nil && root.XMLName.Local == "View"
}

func page(r *http.Request) (int, int, bool) {
	q := r.URL.Query()
	p, size := 1, 100
	if v := q.Get("page"); v != "" {
		p, _ = strconv.Atoi(v)
	}
	if v := q.Get("page_size"); v != "" {
		size, _ = strconv.Atoi(v)
	}
	return p, size, p >= 1 && size >= 1
}

func (s *Server) projectsList(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodPost:
		var p label.Project
		if !decode(w, r, &p) {
			return
		}
		if p.LabelConfig != "" && !validConfig(p.LabelConfig) {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"label_config": {"Can't parse XML"}})
			return
		}
		if msg := titleProblem(p.Title); msg != "" {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"title": {msg}})
			return
		}
		p.ID, p.CreatedAt = s.id(), "2026-12-01T00:00:00Z"
		s.projects[p.ID] = &p
		writeJSON(w, http.StatusCreated, p)
	case http.MethodGet:
		n, size, ok := page(r)
		if !ok {
			fail(w, http.StatusNotFound, "Invalid page.", nil)
			return
		}
		var all []label.Project
		for _, id := range sortedIDs(s.projects) {
			all = append(all, *s.projects[id])
		}
		from, to := min((n-1)*size, len(all)), min(n*size, len(all))
		if from >= len(all) && n > 1 {
			fail(w, http.StatusNotFound, "Invalid page.", nil)
			return
		}
		var next *string
		if to < len(all) {
			u := fmt.Sprintf("%s/api/projects/?page=%d&page_size=%d", s.URL, n+1, size)
			next = &u
		}
		results := all[from:to]
		if results == nil {
			results = []label.Project{}
		}
		writeJSON(w, http.StatusOK, map[string]any{"count": len(all), "next": next, "previous": nil, "results": results})
	default:
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method \"%s\" not allowed.", r.Method), nil)
	}
}

func sortedIDs(m map[int]*label.Project) []int {
	var ids []int
	for id := range m {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

func (s *Server) project(w http.ResponseWriter, r *http.Request, p *label.Project) {
	switch r.Method {
	case http.MethodGet:
		p.TaskNumber = 0
		for _, t := range s.tasks {
			if t.Project == p.ID {
				p.TaskNumber++
			}
		}
		writeJSON(w, http.StatusOK, p)
	case http.MethodPatch:
		var patch label.Project
		if !decode(w, r, &patch) {
			return
		}
		if patch.LabelConfig != "" && !validConfig(patch.LabelConfig) {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"label_config": {"Can't parse XML"}})
			return
		}
		if msg := titleProblem(patch.Title); msg != "" {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"title": {msg}})
			return
		}
		if patch.Title != "" {
			p.Title = patch.Title
		}
		if patch.Description != "" {
			p.Description = patch.Description
		}
		if patch.LabelConfig != "" {
			p.LabelConfig = patch.LabelConfig
		}
		writeJSON(w, http.StatusOK, p)
	case http.MethodDelete:
		delete(s.projects, p.ID)
		s.tasks = slices.DeleteFunc(s.tasks, func(t *label.Task) bool { return t.Project == p.ID })
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method \"%s\" not allowed.", r.Method), nil)
	}
}

func (s *Server) importTasks(w http.ResponseWriter, r *http.Request, p *label.Project) {
	var tasks []label.Task
	if !decode(w, r, &tasks) {
		return
	}
	res := label.ImportResult{TaskCount: len(tasks)}
	for _, t := range tasks {
		if len(t.Data) == 0 {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"data": {"This field is required."}})
			return
		}
	}
	for _, t := range tasks {
		t := t
		t.ID, t.Project = s.id(), p.ID
		for i := range t.Annotations {
			t.Annotations[i].ID, t.Annotations[i].Task = s.id(), t.ID
		}
		for i := range t.Predictions {
			t.Predictions[i].ID, t.Predictions[i].Task = s.id(), t.ID
		}
		res.AnnotationCount += len(t.Annotations)
		res.PredictionCount += len(t.Predictions)
		s.tasks = append(s.tasks, &t)
	}
	writeJSON(w, http.StatusCreated, map[string]any{
		"task_count": res.TaskCount, "annotation_count": res.AnnotationCount, "prediction_count": res.PredictionCount,
		"duration": 0.01, "file_upload_ids": []int{}, "could_be_tasks_list": false, "found_formats": []string{}, "data_columns": []string{},
	})
}

func (s *Server) tasksList(w http.ResponseWriter, r *http.Request) {
	project, _ := strconv.Atoi(r.URL.Query().Get("project"))
	n, size, ok := page(r)
	if !ok {
		fail(w, http.StatusNotFound, "Invalid page.", nil)
		return
	}
	var all []label.Task
	annotations, predictions := 0, 0
	for _, t := range s.tasks {
		if t.Project == project {
			all = append(all, *t)
			annotations += len(t.Annotations)
			predictions += len(t.Predictions)
		}
	}
	from, to := min((n-1)*size, len(all)), min(n*size, len(all))
	if from >= len(all) && n > 1 {
		fail(w, http.StatusNotFound, "Invalid page.", nil)
		return
	}
	page := all[from:to]
	if page == nil {
		page = []label.Task{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tasks": page, "total": len(all), "total_annotations": annotations, "total_predictions": predictions})
}

func (s *Server) webhook(w http.ResponseWriter, r *http.Request, parts []string) {
	switch {
	case len(parts) == 2 && r.Method == http.MethodPost:
		var h label.Webhook
		if !decode(w, r, &h) {
			return
		}
		if h.URL == "" {
			fail(w, http.StatusBadRequest, "Validation error", map[string][]string{"url": {"This field is required."}})
			return
		}
		h.ID = s.id()
		s.webhooks = append(s.webhooks, h)
		writeJSON(w, http.StatusCreated, h)
	case len(parts) == 2 && r.Method == http.MethodGet:
		project, _ := strconv.Atoi(r.URL.Query().Get("project"))
		out := []label.Webhook{}
		for _, h := range s.webhooks {
			if h.Project == project {
				out = append(out, h)
			}
		}
		writeJSON(w, http.StatusOK, out)
	case len(parts) == 3 && r.Method == http.MethodDelete:
		id, _ := strconv.Atoi(parts[2])
		before := len(s.webhooks)
		s.webhooks = slices.DeleteFunc(s.webhooks, func(h label.Webhook) bool { return h.ID == id })
		if len(s.webhooks) == before {
			fail(w, http.StatusNotFound, "Not found.", nil)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("Method \"%s\" not allowed.", r.Method), nil)
	}
}
