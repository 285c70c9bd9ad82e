package readme_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quotedSnippets returns each snippet README.md quotes, by name: the Go
// block that follows a `<!-- snippet: NAME -->` line.
func quotedSnippets(t *testing.T, readme string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)<!-- snippet: (\\S+) -->\n```go\n(.*?)```").FindAllStringSubmatch(readme, -1) {
		require.NotContains(t, out, m[1], "README quotes snippet %q twice", m[1])
		out[m[1]] = m[2]
	}
	return out
}

// codeRegions returns the regions between `// snippet: NAME` and
// `// end snippet` of this package's Go files, each less the indentation
// its lines share.
func codeRegions(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]string{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		var name string
		var lines []string
		sc := bufio.NewScanner(strings.NewReader(string(data)))
		for sc.Scan() {
			line := sc.Text()
			trimmed := strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(trimmed, "// snippet: "):
				require.Empty(t, name, "%s: snippet %q opens inside %q", f, trimmed, name)
				name, lines = strings.TrimPrefix(trimmed, "// snippet: "), nil
			case trimmed == "// end snippet":
				require.NotEmpty(t, name, "%s: end snippet without a snippet", f)
				require.NotContains(t, out, name, "snippet %q is defined twice", name)
				out[name] = dedent(lines)
				name = ""
			case name != "":
				lines = append(lines, line)
			}
		}
		require.Empty(t, name, "%s: snippet %q is not closed", f, name)
	}
	return out
}

func dedent(lines []string) string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	common := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		n := len(l) - len(strings.TrimLeft(l, "\t"))
		if common < 0 || n < common {
			common = n
		}
	}
	var b strings.Builder
	for _, l := range lines {
		if len(l) >= common && common > 0 {
			l = l[common:]
		}
		b.WriteString(strings.TrimRight(l, " \t") + "\n")
	}
	return b.String()
}

// TestREADMEQuotesTheCode holds every snippet the README quotes identical
// to the code region of the same name, which compiles and runs in this
// package's tests, and every region quoted.
func TestREADMEQuotesTheCode(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	quoted := quotedSnippets(t, string(data))
	code := codeRegions(t)
	require.NotEmpty(t, quoted)
	for name, body := range quoted {
		want, ok := code[name]
		if assert.True(t, ok, "README quotes snippet %q, which no code region holds", name) {
			assert.Equal(t, want, body, "README's snippet %q differs from the code it quotes", name)
		}
	}
	for name := range code {
		assert.Contains(t, quoted, name, "the code region %q is quoted nowhere in README", name)
	}
	for _, name := range []string{"tenant", "fine-tune", "serve", "pipeline", "rag", "cubetest"} {
		assert.Contains(t, quoted, name)
	}
}

// TestREADMECommandsAreCIs: the README's first block holds the quickstart
// and the test command, and .ci/run runs exactly that test command.
func TestREADMECommandsAreCIs(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)<!-- commands -->\n```sh\n(.*?)```").FindStringSubmatch(string(data))
	require.NotNil(t, m, "README has a <!-- commands --> block")
	var commands []string
	for _, l := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		cmd, _, _ := strings.Cut(l, "#")
		commands = append(commands, strings.TrimSpace(cmd))
	}
	require.Len(t, commands, 2)
	assert.Equal(t, "go run ./examples/quickstart", commands[0])
	test := commands[1]
	assert.Contains(t, test, "go test ./...")

	ci, err := os.ReadFile("../../.ci/run")
	require.NoError(t, err)
	lines := strings.Split(string(ci), "\n")
	assert.True(t, slices.Contains(lines, test+" || status=$?"),
		".ci/run runs the README's test command %q as written (followed by `|| status=$?`)", test)
}
