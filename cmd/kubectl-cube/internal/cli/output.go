package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/spf13/pflag"

	"github.com/cubestudio/cube"
)

// outputFlag is -o/--output of status and list: the table (empty) or json,
// for scripts (jq), with the fields the table shows and nothing guessed.
type outputFlag string

func (o *outputFlag) add(f *pflag.FlagSet) {
	f.StringVarP((*string)(o), "output", "o", "", "the output format: json (default: a table)")
}

// check refuses a format this command cannot write, naming the flag.
func (o outputFlag) check() error {
	switch o {
	case "", "json":
		return nil
	}
	return fmt.Errorf("-o/--output %q: not a format; one of json (or none, for a table)", string(o))
}

// releaseView is one release with its status as -o json writes it. The
// keys are kubectl's style (lowerCamelCase); Error is set, and Status
// left out, when the status could not be read.
type releaseView struct {
	Namespace string      `json:"namespace"`
	Name      string      `json:"name"`
	Kind      string      `json:"kind"`
	UID       string      `json:"uid,omitempty"`
	Created   *time.Time  `json:"created,omitempty"`
	Status    *statusView `json:"status,omitempty"`
	Error     string      `json:"error,omitempty"`
}

type statusView struct {
	Phase    cube.Phase      `json:"phase"`
	Reason   string          `json:"reason,omitempty"`
	Objects  []objectView    `json:"objects,omitempty"`
	Refusals []refusalView   `json:"refusals,omitempty"`
	Pods     []podView       `json:"pods,omitempty"`
	Queue    []queueWaitView `json:"queue,omitempty"`
}

type objectView struct {
	Object  string     `json:"object"`
	Phase   cube.Phase `json:"phase"`
	Reason  string     `json:"reason,omitempty"`
	Message string     `json:"message,omitempty"`
}

type refusalView struct {
	Object  string     `json:"object"`
	Reason  string     `json:"reason"`
	Message string     `json:"message"`
	Count   int32      `json:"count"`
	Last    *time.Time `json:"last,omitempty"`
}

type podView struct {
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	Reason    string `json:"reason"`
	Message   string `json:"message,omitempty"`
	Restarts  int32  `json:"restarts"`
	Stuck     bool   `json:"stuck"`
}

type queueWaitView struct {
	Object   string `json:"object"`
	Workload string `json:"workload"`
	Reason   string `json:"reason"`
	Message  string `json:"message"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// viewOf is a release and its status (or the error reading it) as -o json
// writes them.
func viewOf(rel *cube.Release, st cube.Status, err error) releaseView {
	v := releaseView{Namespace: rel.Namespace, Name: rel.Name, Kind: rel.Kind, UID: rel.UID, Created: timeOrNil(rel.Created)}
	if err != nil {
		v.Error = err.Error()
		return v
	}
	s := &statusView{Phase: st.Phase, Reason: st.Reason}
	for _, o := range st.Objects {
		s.Objects = append(s.Objects, objectView{Object: o.Ref.String(), Phase: o.Phase, Reason: o.Reason, Message: o.Message})
	}
	for _, r := range st.Refusals {
		message := r.Message
		if r.Quota != nil {
			message = r.Quota.Error()
		}
		s.Refusals = append(s.Refusals, refusalView{Object: r.Object.String(), Reason: r.Reason, Message: message, Count: r.Count, Last: timeOrNil(r.Last)})
	}
	for _, p := range st.Pods {
		s.Pods = append(s.Pods, podView{Pod: p.Pod, Container: p.Container, Reason: p.Reason, Message: p.Message, Restarts: p.Restarts, Stuck: p.Stuck})
	}
	for _, q := range st.Queue {
		s.Queue = append(s.Queue, queueWaitView{Object: q.Object.String(), Workload: q.Workload, Reason: q.Reason, Message: q.Message})
	}
	v.Status = s
	return v
}

// writeJSON writes v indented, as kubectl -o json does.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "    ")
	return enc.Encode(v)
}
