package tune

import (
	"github.com/cubestudio/cube"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
)

// The study file is JSON lines: a header naming the study, then one
// record per finished trial, each appended with a single write and
// fsynced before the next trial is judged against it. A crash can only
// tear the last line, which lacks its newline: it is ignored and cut off
// on the next open. Any other line that does not parse is an error, so a
// damaged file is never silently half-read.

// studyHeader identifies a study: a file written by another search space,
// objective, algorithm, early stopping, seed or parallelism cannot be
// resumed, because its trials would not be the ones this study samples.
type studyHeader struct {
	Format        int               `json:"format"`
	Objective     string            `json:"objective"`
	Parameters    []json.RawMessage `json:"parameters"`
	Algorithm     string            `json:"algorithm"`
	EarlyStopping string            `json:"earlyStopping,omitempty"`
	Seed          uint64            `json:"seed"`
	Parallel      int               `json:"parallel"`
	ConstantLiar  bool              `json:"constantLiar"`
}

// trialRecord is one finished trial. Numbers are strings so that NaN and
// infinities, which JSON has no spelling for, survive.
type trialRecord struct {
	Number  int               `json:"number"`
	State   cube.Phase        `json:"state"`
	Values  map[string]string `json:"values"`
	Value   string            `json:"value"`
	Reports []string          `json:"reports,omitempty"`
	Error   string            `json:"error,omitempty"`
	Sampler string            `json:"sampler,omitempty"`
}

const studyFormat = 1

func (l *Local) header() studyHeader {
	h := studyHeader{Format: studyFormat, Seed: uint64(l.seed), Parallel: l.parallel, ConstantLiar: l.constantLiar}
	h.Objective = "minimize " + l.objective.metric
	if l.objective.maximize {
		h.Objective = "maximize " + l.objective.metric
	}
	for _, p := range l.params {
		raw, _ := json.Marshal(p.katib()) // a ParameterSpec of strings always marshals
		h.Parameters = append(h.Parameters, raw)
	}
	h.Algorithm = settingsString(l.algorithm.name, l.algorithm.settings)
	if l.earlyStopping != nil {
		h.EarlyStopping = settingsString(l.earlyStopping.name, l.earlyStopping.settings)
	}
	return h
}

func settingsString(name string, settings []setting) string {
	s := slices.Clone(settings)
	slices.SortFunc(s, func(a, b setting) int {
		if a.name < b.name {
			return -1
		}
		if a.name > b.name {
			return 1
		}
		return 0
	})
	out := name
	for _, kv := range s {
		out += " " + kv.name + "=" + kv.value
	}
	return out
}

// differs names the first field in which two headers differ ("" if none).
func (h studyHeader) differs(o studyHeader) string {
	switch {
	case h.Format != o.Format:
		return "format"
	case h.Objective != o.Objective:
		return "objective"
	case len(h.Parameters) != len(o.Parameters):
		return "parameters"
	case h.Algorithm != o.Algorithm:
		return "algorithm"
	case h.EarlyStopping != o.EarlyStopping:
		return "earlyStopping"
	case h.Seed != o.Seed:
		return "seed"
	case h.Parallel != o.Parallel:
		return "parallelism"
	case h.ConstantLiar != o.ConstantLiar:
		return "constantLiar"
	}
	for i := range h.Parameters {
		if !bytes.Equal(h.Parameters[i], o.Parameters[i]) {
			return fmt.Sprintf("parameters[%d]", i)
		}
	}
	return ""
}

// studyFile appends trial records to an open study file.
type studyFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

// openStudy opens (or creates) the study file at path for l and returns
// the trials it records.
func (l *Local) openStudy(path string) (*studyFile, []TrialResult, error) {
	want := l.header()
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, nil, fmt.Errorf("read study file %s: %w", path, err)
	}
	// Only the bytes up to the last newline count: a tail without one is a
	// record torn by a crash.
	complete := data[:bytes.LastIndexByte(data, '\n')+1]
	lines := bytes.Split(bytes.TrimSuffix(complete, []byte("\n")), []byte("\n"))
	if len(complete) == 0 {
		lines = nil
	}
	var trials []TrialResult
	seen := map[int]bool{}
	for n, line := range lines {
		if n == 0 {
			var got studyHeader
			if err := json.Unmarshal(line, &got); err != nil {
				return nil, nil, fmt.Errorf("study file %s line 1: not a study header: %w", path, err)
			}
			if f := want.differs(got); f != "" {
				return nil, nil, fmt.Errorf("study file %s holds another study: its %s differs from this study's", path, f)
			}
			continue
		}
		r, err := l.parseRecord(line)
		if err != nil {
			return nil, nil, fmt.Errorf("study file %s line %d: %w", path, n+1, err)
		}
		if seen[r.Number] {
			return nil, nil, fmt.Errorf("study file %s line %d: trial %d is recorded twice", path, n+1, r.Number)
		}
		seen[r.Number] = true
		trials = append(trials, r)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, nil, fmt.Errorf("open study file %s: %w", path, err)
	}
	s := &studyFile{path: path, f: f}
	if err := f.Truncate(int64(len(complete))); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("cut the torn record off study file %s: %w", path, err)
	}
	if _, err := f.Seek(int64(len(complete)), 0); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("seek study file %s: %w", path, err)
	}
	if len(lines) == 0 {
		raw, _ := json.Marshal(want) // strings and numbers always marshal
		if err := s.write(raw); err != nil {
			f.Close()
			return nil, nil, err
		}
		// The new file's name must survive a crash too.
		if d, err := os.Open(filepath.Dir(path)); err == nil {
			_ = d.Sync() // best effort: some filesystems cannot sync a directory
			d.Close()
		}
	}
	return s, trials, nil
}

func (l *Local) parseRecord(line []byte) (TrialResult, error) {
	var rec trialRecord
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return TrialResult{}, fmt.Errorf("not a trial record: %w", err)
	}
	if rec.Number < 0 {
		return TrialResult{}, fmt.Errorf("trial number %d is negative", rec.Number)
	}
	if !slices.Contains([]cube.Phase{cube.Succeeded, cube.Failed, EarlyStopped}, rec.State) {
		return TrialResult{}, fmt.Errorf("trial %d: unknown state %q", rec.Number, rec.State)
	}
	r := TrialResult{Number: rec.Number, State: rec.State, Values: map[string]string{}, Sampler: rec.Sampler, params: map[string]any{}}
	for _, p := range l.params {
		s, ok := rec.Values[p.name]
		if !ok {
			return TrialResult{}, fmt.Errorf("trial %d has no value for parameter %q", rec.Number, p.name)
		}
		v, err := p.parse(s)
		if err != nil {
			return TrialResult{}, fmt.Errorf("trial %d parameter %q: %w", rec.Number, p.name, err)
		}
		r.params[p.name] = v
	}
	r.Values = formatValues(r.params)
	var err error
	if r.Value, err = strconv.ParseFloat(rec.Value, 64); err != nil {
		return TrialResult{}, fmt.Errorf("trial %d value %q: %w", rec.Number, rec.Value, err)
	}
	for _, s := range rec.Reports {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return TrialResult{}, fmt.Errorf("trial %d report %q: %w", rec.Number, s, err)
		}
		r.Reports = append(r.Reports, v)
	}
	if rec.Error != "" {
		r.Err = errors.New(rec.Error)
	}
	return r, nil
}

// parse reads a value formatted as Katib assigns it.
func (p Param) parse(s string) (any, error) {
	switch p.kind {
	case ChoiceKind:
		if !slices.Contains(p.choices, s) {
			return nil, fmt.Errorf("%q is not one of %q", s, p.choices)
		}
		return s, nil
	case IntKind:
		n, err := strconv.Atoi(s)
		if err != nil || float64(n) < p.min || float64(n) > p.max {
			return nil, fmt.Errorf("%q is not an integer in [%s, %s]", s, formatFloat(p.min), formatFloat(p.max))
		}
		return n, nil
	case DiscreteKind:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || !slices.Contains(p.values, f) {
			return nil, fmt.Errorf("%q is not one of the values", s)
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < p.min || f > p.max {
		return nil, fmt.Errorf("%q is not a number in [%s, %s]", s, formatFloat(p.min), formatFloat(p.max))
	}
	return f, nil
}

// append records a finished trial and waits until it is on disk.
func (s *studyFile) append(r TrialResult) error {
	rec := trialRecord{Number: r.Number, State: r.State, Values: r.Values, Value: formatFloat(r.Value), Sampler: r.Sampler}
	for _, v := range r.Reports {
		rec.Reports = append(rec.Reports, formatFloat(v))
	}
	if r.Err != nil {
		rec.Error = r.Err.Error()
	}
	raw, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("record trial %d: %w", r.Number, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.write(raw)
}

// write appends one line in a single write and fsyncs it.
func (s *studyFile) write(raw []byte) error {
	if _, err := s.f.Write(append(raw, '\n')); err != nil {
		return fmt.Errorf("write study file %s: %w", s.path, err)
	}
	if err := s.f.Sync(); err != nil {
		return fmt.Errorf("sync study file %s: %w", s.path, err)
	}
	return nil
}

func (s *studyFile) close() error { return s.f.Close() }
