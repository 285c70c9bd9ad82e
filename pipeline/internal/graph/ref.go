package graph

import (
	"strings"
)

// RefKind is what a placeholder refers to.
type RefKind int

const (
	RefParam          RefKind = iota + 1 // {{params.NAME}}
	RefOutput                            // {{steps.STEP.outputs.NAME}}
	RefOutputPath                        // {{outputs.NAME.path}}
	RefItem                              // {{item}} or {{item.KEY}}
	RefWorkspace                         // {{workspace}}
	RefPipelineName                      // {{pipeline.name}}
	RefPipelineStatus                    // {{pipeline.status}}
)

// Ref is one placeholder found in a string.
type Ref struct {
	Kind RefKind
	Step string // refOutput
	Name string // param, output or item key
}

// IsParamName is Argo's parameter and artifact name rule
// (workflow/validate: paramOrArtifactNameRegex), made to start with a
// letter or digit: ^[a-zA-Z0-9][-a-zA-Z0-9_]*$. Written out, not a regular
// expression: it runs on every placeholder of every step.
func IsParamName(s string) bool {
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
func parseRef(inner string) (Ref, error) {
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
		if len(parts) != 2 || !IsParamName(parts[1]) {
			return Ref{}, errMalformed(inner)
		}
		return Ref{Kind: RefParam, Name: parts[1]}, nil
	case "steps":
		if len(parts) != 4 || parts[2] != "outputs" || parts[1] == "" || !IsParamName(parts[3]) {
			return Ref{}, errMalformed(inner + "}}: want {{steps.STEP.outputs.NAME")
		}
		return Ref{Kind: RefOutput, Step: parts[1], Name: parts[3]}, nil
	case "outputs":
		if len(parts) != 3 || parts[2] != "path" || !IsParamName(parts[1]) {
			return Ref{}, errMalformed(inner + "}}: want {{outputs.NAME.path")
		}
		return Ref{Kind: RefOutputPath, Name: parts[1]}, nil
	case "item":
		switch {
		case len(parts) == 1:
			return Ref{Kind: RefItem}, nil
		case len(parts) == 2 && IsParamName(parts[1]):
			return Ref{Kind: RefItem, Name: parts[1]}, nil
		}
		return Ref{}, errMalformed(inner)
	case "workspace":
		if len(parts) == 1 {
			return Ref{Kind: RefWorkspace}, nil
		}
	case "pipeline":
		if len(parts) == 2 && parts[1] == "name" {
			return Ref{Kind: RefPipelineName}, nil
		}
		if len(parts) == 2 && parts[1] == "status" {
			return Ref{Kind: RefPipelineStatus}, nil
		}
	}
	return Ref{}, errMalformed(inner)
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

// ScanRefs returns the placeholders of s that belong to cube, and an error
// for each malformed one.
func ScanRefs(s string) ([]Ref, []error) {
	var refs []Ref
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

// SoleRef returns the placeholder s consists of, if it is exactly one of
// cube's.
func SoleRef(s string) (Ref, bool) {
	var r Ref
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

// Substitute replaces each of cube's placeholders in s with what fn returns
// for it; other placeholders stay as they are.
func Substitute(s string, fn func(Ref) string) string {
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

// InputName is the Argo input parameter a template receives a reference
// through. Step names cannot contain '_' and names cannot start with one, so
// "STEP_NAME" and "item__KEY" never collide.
func InputName(r Ref) string {
	switch r.Kind {
	case RefOutput:
		return r.Step + "_" + r.Name
	case RefItem:
		if r.Name == "" {
			return "item"
		}
		return "item__" + r.Name
	}
	return ""
}
