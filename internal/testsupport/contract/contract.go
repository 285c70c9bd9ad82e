package contract

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// Rule is the first column of a contract line: what kind of fact it states.
type Rule string

// The rules a contract may state. Conditions (the subject and value of
// excludes, requires and needs) are "*" (always), "key" (present) or
// "key=pattern" (present with a value the pattern matches; * in a
// pattern stands for any run of characters), read from the
// configuration being checked.
const (
	// Engine names the engine, its version and the repository and commit
	// the facts were read from; it is the first fact of every contract.
	Engine Rule = "engine"
	// Key is a configuration key the engine reads; the value lists the
	// values it accepts, comma-separated, or is empty for any value.
	Key Rule = "key"
	// Flag is a command-line flag the engine's parser defines. The value is
	// "bool" (no argument), "value" (one argument), "values" (nargs="*": one
	// occurrence with any number of arguments; a repeat replaces the first),
	// "repeat" (one argument, may repeat) or "value:a,b" (one of a, b).
	Flag Rule = "flag"
	// Env is an environment variable the engine reads, with its accepted
	// values like Key.
	Env Rule = "env"
	// Excludes says the engine refuses a configuration in which both the
	// subject and the value conditions hold.
	Excludes Rule = "excludes"
	// Requires says the value condition must hold whenever the subject
	// condition does.
	Requires Rule = "requires"
	// Set lists, in the value, names a set called by the subject must hold
	// together (a LLaMA-Factory columns map for one format and stage).
	Set Rule = "set"
	// Image records what a published image contains: the value is
	// "package=version", "package" (present, version not recorded) or
	// "!package" (absent).
	Image Rule = "image"
	// Needs says a configuration in which the subject condition holds runs
	// something that needs the value: "package" or "package" followed by
	// version constraints (">=0.8.6,<=0.9.6").
	Needs Rule = "needs"
)

var rules = []Rule{Engine, Key, Flag, Env, Excludes, Requires, Set, Image, Needs}

// Fact is one line of a contract.
type Fact struct {
	Rule    Rule
	Subject string
	Value   string
	// Cite is the upstream file the fact was read from.
	Cite string
	// Line is the fact's line in the contract file.
	Line int
}

func (f Fact) String() string {
	return fmt.Sprintf("%s %s %q (%s)", f.Rule, f.Subject, f.Value, f.Cite)
}

// Contract is what one engine at one version accepts.
type Contract struct {
	// Name and Version come from the engine fact; Source is where the facts
	// were read (repository@commit).
	Name, Version, Source string
	Facts                 []Fact
	file                  string
}

// Load reads a contract file, refusing one whose lines are malformed, whose
// facts cite no file, or that does not begin with an engine fact; every
// problem is reported at once with its line.
func Load(file string) (*Contract, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("load contract: %w", err)
	}
	return Parse(file, string(data))
}

// Parse reads a contract from text; name is used in errors.
func Parse(name, text string) (*Contract, error) {
	c := &Contract{file: name}
	var errs []error
	bad := func(line int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", name, line, fmt.Sprintf(format, args...)))
	}
	seen := map[string]int{}
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; s.Scan(); n++ {
		line := strings.TrimRight(s.Text(), "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cols := strings.Split(line, "\t")
		if len(cols) != 4 {
			bad(n, "want 4 tab-separated columns (rule, subject, value, cited file), have %d", len(cols))
			continue
		}
		f := Fact{Rule: Rule(cols[0]), Subject: cols[1], Value: cols[2], Cite: cols[3], Line: n}
		switch {
		case !slices.Contains(rules, f.Rule):
			bad(n, "unknown rule %q (one of %v)", cols[0], rules)
			continue
		case f.Subject == "":
			bad(n, "%s: empty subject", f.Rule)
			continue
		case strings.TrimSpace(f.Cite) == "" || !strings.ContainsAny(f.Cite, "./"):
			bad(n, "%s %s: cites no upstream file", f.Rule, f.Subject)
			continue
		}
		if f.Rule == Engine {
			if c.Name != "" || len(c.Facts) > 0 {
				bad(n, "the engine fact must be the first and only one")
				continue
			}
			c.Name, c.Version, c.Source = f.Subject, f.Value, f.Cite
			continue
		}
		if c.Name == "" {
			bad(n, "the first fact must be the engine fact")
		}
		if err := checkFact(f); err != nil {
			bad(n, "%s %s: %v", f.Rule, f.Subject, err)
			continue
		}
		if f.Rule == Key || f.Rule == Flag || f.Rule == Env || f.Rule == Set {
			id := string(f.Rule) + "\x00" + f.Subject
			if first, dup := seen[id]; dup {
				bad(n, "%s %s is stated again (first at line %d)", f.Rule, f.Subject, first)
				continue
			}
			seen[id] = n
		}
		c.Facts = append(c.Facts, f)
	}
	if err := s.Err(); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w", name, err))
	}
	if c.Name == "" && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("%s: no engine fact", name))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return c, nil
}

func checkFact(f Fact) error {
	switch f.Rule {
	case Flag:
		if !strings.HasPrefix(f.Subject, "-") {
			return errors.New("a flag begins with -")
		}
		switch kind, _, _ := strings.Cut(f.Value, ":"); kind {
		case "bool", "value", "values", "repeat":
		default:
			return fmt.Errorf("arity %q is none of bool, value, values, repeat, value:choices", f.Value)
		}
	case Excludes, Requires:
		if err := checkCondition(f.Subject); err != nil {
			return err
		}
		return checkCondition(f.Value)
	case Needs:
		if err := checkCondition(f.Subject); err != nil {
			return err
		}
		_, _, err := parseNeed(f.Value)
		return err
	case Image:
		if _, _, err := parseContent(f.Value); err != nil {
			return err
		}
	case Set:
		if f.Value == "" {
			return errors.New("empty set")
		}
	}
	return nil
}

func checkCondition(c string) error {
	if c == "" {
		return errors.New("empty condition")
	}
	if key, _, _ := strings.Cut(c, "="); key == "" {
		return fmt.Errorf("condition %q names no key", c)
	}
	return nil
}

// holds reports whether a condition holds in cfg.
func holds(cond string, cfg map[string]string) bool {
	if cond == "*" {
		return true
	}
	key, pattern, hasValue := strings.Cut(cond, "=")
	v, ok := cfg[key]
	if !ok || !hasValue {
		return ok
	}
	return match(pattern, v)
}

// match reports whether v matches pattern, in which * stands for any run of
// characters (slashes included, so "*z3*" matches a path) and nothing else is
// special.
func match(pattern, v string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return v == pattern
	}
	if !strings.HasPrefix(v, parts[0]) {
		return false
	}
	v = v[len(parts[0]):]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(v, p)
		if i < 0 {
			return false
		}
		v = v[i+len(p):]
	}
	return strings.HasSuffix(v, parts[len(parts)-1])
}

func (c *Contract) finding(f Fact, format string, args ...any) error {
	return fmt.Errorf("%s %s: %s (%s:%d, from %s)", c.Name, c.Version, fmt.Sprintf(format, args...), c.file, f.Line, f.Cite)
}

func (c *Contract) facts(r Rule) map[string]Fact {
	out := map[string]Fact{}
	for _, f := range c.Facts {
		if f.Rule == r {
			out[f.Subject] = f
		}
	}
	return out
}

// Fact returns the fact of rule r about subject, for tests that read a value
// the contract records.
func (c *Contract) Fact(r Rule, subject string) (Fact, bool) {
	for _, f := range c.Facts {
		if f.Rule == r && f.Subject == subject {
			return f, true
		}
	}
	return Fact{}, false
}

// CheckKeys checks a flat configuration (nested keys joined with dots, values
// in their rendered text) against the contract's key, excludes and requires
// facts. what names the configuration in the findings.
func (c *Contract) CheckKeys(what string, cfg map[string]string) error {
	keys := c.facts(Key)
	var errs []error
	for _, k := range sortedKeys(cfg) {
		f, ok := keys[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s %s: %s is not a key the engine reads (%s)", what, c.Name, c.Version, k, c.file))
			continue
		}
		if err := c.choice(f, cfg[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	errs = append(errs, c.conditions(what, cfg)...)
	return errors.Join(errs...)
}

func (c *Contract) choice(f Fact, v string) error {
	choices := f.Value
	if f.Rule == Flag {
		_, choices, _ = strings.Cut(f.Value, ":")
	}
	if choices == "" || slices.Contains(strings.Split(choices, ","), v) {
		return nil
	}
	return c.finding(f, "%s=%q is not one of %s", f.Subject, v, choices)
}

func (c *Contract) conditions(what string, cfg map[string]string) []error {
	var errs []error
	for _, f := range c.Facts {
		switch {
		case f.Rule == Excludes && holds(f.Subject, cfg) && holds(f.Value, cfg):
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(f, "%s and %s together are refused", f.Subject, f.Value)))
		case f.Rule == Requires && holds(f.Subject, cfg) && !holds(f.Value, cfg):
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(f, "%s requires %s", f.Subject, f.Value)))
		}
	}
	return errs
}

// CheckEnv checks environment variables against the contract's env facts
// and, read as a configuration, its excludes and requires facts.
func (c *Contract) CheckEnv(what string, env map[string]string) error {
	known := c.facts(Env)
	var errs []error
	for _, k := range sortedKeys(env) {
		f, ok := known[k]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s %s: %s is not a variable the engine reads (%s)", what, c.Name, c.Version, k, c.file))
			continue
		}
		if err := c.choice(f, env[k]); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", what, err))
		}
	}
	errs = append(errs, c.conditions(what, env)...)
	return errors.Join(errs...)
}

// CheckArgs checks a command line (the arguments after the program and its
// subcommand) against the contract's flag facts: every flag is defined, has
// the arguments its arity takes, takes an allowed value and is repeated only
// where the parser keeps every occurrence; then the flags, read as a
// configuration (flag to its last value, "" for a bool), are checked against
// the excludes and requires facts. It returns the positional arguments.
func (c *Contract) CheckArgs(what string, args []string) ([]string, error) {
	flags := c.facts(Flag)
	var errs []error
	var positional []string
	cfg := map[string]string{}
	count := map[string]int{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !isFlag(a) {
			positional = append(positional, a)
			continue
		}
		name, inline, hasInline := strings.Cut(a, "=")
		f, ok := flags[name]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %s %s: %s is not a flag the engine defines (%s)", what, c.Name, c.Version, name, c.file))
			continue
		}
		count[name]++
		kind, _, _ := strings.Cut(f.Value, ":")
		if count[name] == 2 && kind != "repeat" {
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(f, "%s is given more than once; the parser keeps only the last", name)))
		}
		var values []string
		switch {
		case kind == "bool":
			if hasInline {
				errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(f, "%s takes no value", name)))
			}
		case hasInline:
			values = []string{inline}
		case kind == "values":
			for i+1 < len(args) && !isFlag(args[i+1]) {
				i++
				values = append(values, args[i])
			}
		default:
			if i+1 >= len(args) || isFlag(args[i+1]) {
				errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(f, "%s needs a value", name)))
				continue
			}
			i++
			values = []string{args[i]}
		}
		for _, v := range values {
			if err := c.choice(f, v); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", what, err))
			}
		}
		cfg[name] = strings.Join(values, " ")
	}
	errs = append(errs, c.conditions(what, cfg)...)
	return positional, errors.Join(errs...)
}

func isFlag(a string) bool {
	if !strings.HasPrefix(a, "-") || a == "-" {
		return false
	}
	_, err := strconv.ParseFloat(a, 64)
	return err != nil
}

// CheckSet checks that have holds every name the set fact called subject
// lists; a set the contract does not state is a finding too.
func (c *Contract) CheckSet(what, subject string, have []string) error {
	f, ok := c.Fact(Set, subject)
	if !ok {
		return fmt.Errorf("%s: %s %s: the contract states no set %s (%s)", what, c.Name, c.Version, subject, c.file)
	}
	var missing []string
	for _, n := range strings.Split(f.Value, ",") {
		if !slices.Contains(have, n) {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s: %w", what, c.finding(f, "%s lacks %s", subject, strings.Join(missing, ", ")))
	}
	return nil
}

// CheckImage checks that the image ref contains what every needs fact whose
// condition holds in cfg asks for, at a version it accepts. An image the
// contract records nothing about is a finding: a default image must be
// checked before cube runs anything in it.
func (c *Contract) CheckImage(what, ref string, cfg map[string]string) error {
	contents := map[string]Fact{}
	for _, f := range c.Facts {
		if f.Rule == Image && f.Subject == ref {
			pkg, _, _ := parseContent(f.Value)
			contents[pkg] = f
		}
	}
	if len(contents) == 0 {
		return fmt.Errorf("%s: %s %s: nothing is recorded of image %s (%s)", what, c.Name, c.Version, ref, c.file)
	}
	var errs []error
	for _, need := range c.Facts {
		if need.Rule != Needs || !holds(need.Subject, cfg) {
			continue
		}
		pkg, constraints, _ := parseNeed(need.Value)
		has, ok := contents[pkg]
		if !ok {
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(need, "%s needs %s; nothing is recorded of it in %s", need.Subject, pkg, ref)))
			continue
		}
		_, version, _ := parseContent(has.Value)
		switch {
		case strings.HasPrefix(has.Value, "!"):
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(need, "%s needs %s, which %s does not contain (%s)", need.Subject, pkg, ref, has.Cite)))
		case len(constraints) > 0 && version == "":
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(need, "%s needs %s, whose version in %s is not recorded", need.Subject, need.Value, ref)))
		case !satisfies(version, constraints):
			errs = append(errs, fmt.Errorf("%s: %w", what, c.finding(need, "%s needs %s; %s has %s (%s)", need.Subject, need.Value, ref, version, has.Cite)))
		}
	}
	return errors.Join(errs...)
}

// parseContent splits an image fact's value: "pkg=1.2", "pkg" or "!pkg".
func parseContent(v string) (pkg, version string, err error) {
	pkg, version, _ = strings.Cut(strings.TrimPrefix(v, "!"), "=")
	if pkg == "" || strings.ContainsAny(pkg, " <>!") {
		return "", "", fmt.Errorf("image content %q is not package, package=version or !package", v)
	}
	if version != "" && strings.HasPrefix(v, "!") {
		return "", "", fmt.Errorf("image content %q: an absent package has no version", v)
	}
	return pkg, version, nil
}

// parseNeed splits a needs fact's value: "pkg" or "pkg>=1,<=2".
func parseNeed(v string) (pkg string, constraints []string, err error) {
	i := strings.IndexAny(v, "<>=!")
	if i < 0 {
		return v, nil, nil
	}
	pkg = v[:i]
	if pkg == "" {
		return "", nil, fmt.Errorf("need %q names no package", v)
	}
	for _, con := range strings.Split(v[i:], ",") {
		op, ver := splitOp(con)
		if op == "" || ver == "" {
			return "", nil, fmt.Errorf("need %q: constraint %q is not one of >=, <=, >, <, ==, != and a version", v, con)
		}
		constraints = append(constraints, con)
	}
	return pkg, constraints, nil
}

func splitOp(con string) (op, version string) {
	for _, o := range []string{">=", "<=", "==", "!=", ">", "<"} {
		if v, ok := strings.CutPrefix(con, o); ok {
			return o, v
		}
	}
	return "", ""
}

func satisfies(version string, constraints []string) bool {
	for _, con := range constraints {
		op, want := splitOp(con)
		c := compareVersions(version, want)
		ok := map[string]bool{">=": c >= 0, "<=": c <= 0, "==": c == 0, "!=": c != 0, ">": c > 0, "<": c < 0}[op]
		if !ok {
			return false
		}
	}
	return true
}

// compareVersions compares dotted versions numerically, part by part; a
// part's leading digits count ("0rc1" is 0) and missing parts are 0.
func compareVersions(a, b string) int {
	pa, pb := strings.Split(strings.TrimPrefix(a, "v"), "."), strings.Split(strings.TrimPrefix(b, "v"), ".")
	for i := range max(len(pa), len(pb)) {
		if d := leading(pa, i) - leading(pb, i); d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
	}
	return 0
}

func leading(parts []string, i int) int {
	if i >= len(parts) {
		return 0
	}
	end := 0
	for end < len(parts[i]) && parts[i][end] >= '0' && parts[i][end] <= '9' {
		end++
	}
	n, _ := strconv.Atoi(parts[i][:end])
	return n
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Flatten turns a decoded JSON or YAML document into a flat configuration:
// nested keys joined with dots, list items by index, values in their JSON
// text (strings unquoted).
func Flatten(doc any) map[string]string {
	out := map[string]string{}
	flatten("", doc, out)
	return out
}

func flatten(prefix string, v any, out map[string]string) {
	join := func(k string) string {
		if prefix == "" {
			return k
		}
		return prefix + "." + k
	}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			flatten(join(k), e, out)
		}
	case []any:
		for i, e := range v {
			flatten(join(strconv.Itoa(i)), e, out)
		}
	case string:
		out[prefix] = v
	case nil:
		out[prefix] = "null"
	default:
		out[prefix] = fmt.Sprint(v)
	}
}

// ModuleDir downloads the Go module at moduleAtVersion
// ("github.com/kubeflow/trainer/v2@v2.3.0") into the module cache, whether
// or not cube requires it, and returns its directory there: for the facts
// of an engine written in Go, read from its source at the version cube
// pins.
func ModuleDir(moduleAtVersion string) (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", moduleAtVersion).Output()
	var info struct{ Dir, Error string }
	if jsonErr := json.Unmarshal(out, &info); jsonErr != nil && err == nil {
		err = jsonErr
	}
	switch {
	case info.Error != "":
		return "", fmt.Errorf("go mod download %s: %s", moduleAtVersion, info.Error)
	case err != nil:
		return "", fmt.Errorf("go mod download %s: %w", moduleAtVersion, err)
	case info.Dir == "":
		return "", fmt.Errorf("go mod download %s gave no directory", moduleAtVersion)
	}
	return info.Dir, nil
}
