package pipeline

import (
	"strings"
)

// Placeholders that steps use in their command, args, env, function inputs,
// workload objects, When and ForEachIn. The compiler turns them into Argo
// expressions; the local runner replaces them with values.
const (
	// ItemRef is the current item of a fanned-out step ({{item}}).
	ItemRef = "{{item}}"
	// WorkspaceDir is the shared workspace directory ({{workspace}}): the
	// workspace mount path in Argo, a directory of the run directory locally.
	WorkspaceDir = "{{workspace}}"
	// PipelineName is the name of the run ({{pipeline.name}}): the Workflow's
	// name in Argo, the pipeline's name locally.
	PipelineName = "{{pipeline.name}}"
	// PipelineStatus is the outcome of the run, for the exit handler only
	// ({{pipeline.status}}): Succeeded, Failed or Error.
	PipelineStatus = "{{pipeline.status}}"
)

// ParamRef returns the placeholder of pipeline parameter name
// ({{params.NAME}}).
func ParamRef(name string) string { return "{{params." + name + "}}" }

// ItemField returns the placeholder of field key of the current item, for
// fan-out over a list of JSON objects ({{item.KEY}}).
func ItemField(key string) string { return "{{item." + key + "}}" }

// OutputFile returns the placeholder of the file a container step writes its
// output name to ({{outputs.NAME.path}}); the directory is also in
// $CUBE_OUTPUTS.
func OutputFile(name string) string { return "{{outputs." + name + ".path}}" }

type refKind int

const (
	refParam          refKind = iota + 1 // {{params.NAME}}
	refOutput                            // {{steps.STEP.outputs.NAME}}
	refOutputPath                        // {{outputs.NAME.path}}
	refItem                              // {{item}} or {{item.KEY}}
	refWorkspace                         // {{workspace}}
	refPipelineName                      // {{pipeline.name}}
	refPipelineStatus                    // {{pipeline.status}}
)

// ref is one placeholder found in a string.
type ref struct {
	kind refKind
	step string // refOutput
	name string // param, output or item key
}

// isParamName is Argo's parameter and artifact name rule
// (workflow/validate: paramOrArtifactNameRegex), made to start with a
// letter or digit: ^[a-zA-Z0-9][-a-zA-Z0-9_]*$. Written out, not a regular
// expression: it runs on every placeholder of every step.
func isParamName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '-' && c != '_') {
			return false
		}
	}
	return true
}

// ours reports whether the inside of a placeholder belongs to cube's syntax;
// anything else ({{workflow.uid}}, {{=expr}}) is left for Argo.
func ours(inner string) bool {
	for _, p := range []string{"params.", "steps.", "outputs.", "pipeline."} {
		if strings.HasPrefix(inner, p) {
			return true
		}
	}
	return inner == "item" || strings.HasPrefix(inner, "item.") || inner == "workspace" || inner == "params" || inner == "steps"
}

// parseRef parses the inside of one of cube's placeholders.
func parseRef(inner string) (ref, error) {
	// Every placeholder of every step comes here: the parts of the usual
	// ones (at most five) are split without allocating.
	var buf [5]string
	parts := buf[:0]
	if strings.Count(inner, ".") < len(buf) {
		for rest := inner; ; {
			part, after, more := strings.Cut(rest, ".")
			parts = append(parts, part)
			if !more {
				break
			}
			rest = after
		}
	} else {
		parts = strings.Split(inner, ".")
	}
	switch parts[0] {
	case "params":
		if len(parts) != 2 || !isParamName(parts[1]) {
			return ref{}, errMalformed(inner)
		}
		return ref{kind: refParam, name: parts[1]}, nil
	case "steps":
		if len(parts) != 4 || parts[2] != "outputs" || parts[1] == "" || !isParamName(parts[3]) {
			return ref{}, errMalformed(inner + "}}: want {{steps.STEP.outputs.NAME")
		}
		return ref{kind: refOutput, step: parts[1], name: parts[3]}, nil
	case "outputs":
		if len(parts) != 3 || parts[2] != "path" || !isParamName(parts[1]) {
			return ref{}, errMalformed(inner + "}}: want {{outputs.NAME.path")
		}
		return ref{kind: refOutputPath, name: parts[1]}, nil
	case "item":
		switch {
		case len(parts) == 1:
			return ref{kind: refItem}, nil
		case len(parts) == 2 && isParamName(parts[1]):
			return ref{kind: refItem, name: parts[1]}, nil
		}
		return ref{}, errMalformed(inner)
	case "workspace":
		if len(parts) == 1 {
			return ref{kind: refWorkspace}, nil
		}
	case "pipeline":
		if len(parts) == 2 && parts[1] == "name" {
			return ref{kind: refPipelineName}, nil
		}
		if len(parts) == 2 && parts[1] == "status" {
			return ref{kind: refPipelineStatus}, nil
		}
	}
	return ref{}, errMalformed(inner)
}

// placeholders calls fn for each {{...}} in s, left to right, with its
// bounds and its trimmed inside, which holds no brace (the regular expression
// \{\{\s*([^{}]*?)\s*\}\}, scanned by hand because it runs on every string
// of every step).
func placeholders(s string, fn func(start, end int, inner string)) {
	for i := 0; i < len(s); {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return
		}
		j += i
		k := strings.Index(s[j+2:], "}}")
		if k < 0 {
			return
		}
		k += j + 2
		inner := s[j+2 : k]
		if strings.ContainsAny(inner, "{}") {
			i = j + 1
			continue
		}
		fn(j, k+2, strings.TrimSpace(inner))
		i = k + 2
	}
}

// errMalformed is a placeholder cube cannot parse. It is built only when
// returned: parseRef runs on every placeholder of every step.
type errMalformed string

func (e errMalformed) Error() string { return "malformed placeholder {{" + string(e) + "}}" }

// scanRefs returns the placeholders of s that belong to cube, and an error
// for each malformed one.
func scanRefs(s string) ([]ref, []error) {
	var refs []ref
	var errs []error
	placeholders(s, func(_, _ int, inner string) {
		if !ours(inner) {
			return
		}
		r, err := parseRef(inner)
		if err != nil {
			errs = append(errs, err)
			return
		}
		refs = append(refs, r)
	})
	return refs, errs
}

// soleRef returns the placeholder s consists of, if it is exactly one of
// cube's.
func soleRef(s string) (ref, bool) {
	var r ref
	ok := false
	placeholders(s, func(start, end int, inner string) {
		if start != 0 || end != len(s) || !ours(inner) {
			return
		}
		parsed, err := parseRef(inner)
		r, ok = parsed, err == nil
	})
	return r, ok
}

// substitute replaces each of cube's placeholders in s with what fn returns
// for it; other placeholders stay as they are.
func substitute(s string, fn func(ref) string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 32) // a placeholder's replacement is about as long: one allocation
	last := 0
	placeholders(s, func(start, end int, inner string) {
		if !ours(inner) {
			return
		}
		r, err := parseRef(inner)
		if err != nil {
			return
		}
		b.WriteString(s[last:start])
		b.WriteString(fn(r))
		last = end
	})
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// inputName is the Argo input parameter a template receives a reference
// through. Step names cannot contain '_' and names cannot start with one, so
// "STEP_NAME" and "item__KEY" never collide.
func inputName(r ref) string {
	switch r.kind {
	case refOutput:
		return r.step + "_" + r.name
	case refItem:
		if r.name == "" {
			return "item"
		}
		return "item__" + r.name
	}
	return ""
}
