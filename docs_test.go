package mcpstdio_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// markdownFiles returns the repository's Markdown files (not those of
// installed npm packages).
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no Markdown files found")
	}
	return files
}

// goBlocks returns the ```go blocks of a Markdown text, each as its lines,
// with the line number of its first line.
func goBlocks(text string) (blocks [][]string, at []int) {
	var cur []string
	in := false
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case !in && trimmed == "```go":
			in, cur = true, nil
			at = append(at, i+2)
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, cur)
		case in:
			cur = append(cur, line)
		}
	}
	return blocks, at
}

// codeLines are a snippet's or a file's lines without their indentation
// and gofmt's alignment (runs of spaces count as one), blank lines left out.
func codeLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if l = strings.Join(strings.Fields(l), " "); l != "" {
			out = append(out, l)
		}
	}
	return out
}

func containsRun(haystack, needle []string) bool {
	for i := 0; i+len(needle) <= len(haystack); i++ {
		j := 0
		for j < len(needle) && haystack[i+j] == needle[j] {
			j++
		}
		if j == len(needle) {
			return true
		}
	}
	return false
}

var snippetSource = regexp.MustCompile(`^//.*?([\w./-]+_test\.go)`)

// TestMarkdownSnippets checks that every Go snippet in the Markdown is
// compiled and run by a test: the snippet's first line is a comment naming
// the test file that holds it, and the rest of the snippet appears in that
// file verbatim, but for indentation, alignment and blank lines. Change one without
// the other and this fails.
func TestMarkdownSnippets(t *testing.T) {
	n := 0
	for _, md := range markdownFiles(t) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		blocks, at := goBlocks(string(b))
		for i, block := range blocks {
			n++
			if len(block) < 2 {
				t.Errorf("%s:%d: a Go snippet of %d lines: want a comment naming its test file, then code", md, at[i], len(block))
				continue
			}
			m := snippetSource.FindStringSubmatch(strings.TrimSpace(block[0]))
			if m == nil {
				t.Errorf("%s:%d: the Go snippet's first line %q does not name the _test.go file that runs it", md, at[i], block[0])
				continue
			}
			src, err := os.ReadFile(m[1]) // relative to the repository root, where this test runs
			if err != nil {
				t.Errorf("%s:%d: the Go snippet names %s: %v", md, at[i], m[1], err)
				continue
			}
			if !containsRun(codeLines(strings.Split(string(src), "\n")), codeLines(block[1:])) {
				t.Errorf("%s:%d: the Go snippet is not in %s as it is in the Markdown (but for indentation): update one to match the other", md, at[i], m[1])
			}
		}
	}
	if n == 0 {
		t.Error("no Go snippets found in the Markdown: is the README where this test expects it?")
	}
}

// machinePath matches what only makes sense on one machine: build caches,
// home and temporary directories.
var machinePath = regexp.MustCompile(`go-build[0-9a-f/]|\.cache/|/root(/|\b)|/home/\w|/Users/\w|/tmp/|/var/folders/|[A-Z]:\\Users\\|/work/`)

// TestMarkdownMachinePaths fails on a machine path in any Markdown file or
// runnable example (whose output go doc shows).
func TestMarkdownMachinePaths(t *testing.T) {
	t.Parallel() // it reads files (and runs go doc): beside the README's tests, which wait
	examples, err := filepath.Glob("*/*example*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	more, _ := filepath.Glob("*/*/*/example*_test.go")
	for _, md := range append(append(markdownFiles(t), "examples_test.go"), append(examples, more...)...) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := machinePath.FindString(line); m != "" {
				t.Errorf("%s:%d: a machine path (%q): %s", md, i+1, m, strings.TrimSpace(line))
			}
		}
	}
}

// TestMachinePathPattern checks that the pattern catches what it is for,
// and not the paths the docs use on purpose.
func TestMachinePathPattern(t *testing.T) {
	for _, bad := range []string{"/root/.cache/go-build/f8/f8d6-d/mcpstdio", "/home/me/go/bin/mcpstdio", "/Users/me/x", "-log /tmp/hang.ndjson", `C:\Users\me`, "/tmp/go-build1234/b001/x.test"} {
		if !machinePath.MatchString(bad) {
			t.Errorf("machinePath does not match %q", bad)
		}
	}
	for _, good := range []string{"go build ./cmd/mcpstdio", "/path/to/server.js", "$XDG_STATE_HOME/mcpstdio", "~/.local/state/mcpstdio", "$TMPDIR/mcpstdio-<uid>", "testdata/hang.ndjson"} {
		if machinePath.MatchString(good) {
			t.Errorf("machinePath matches %q", good)
		}
	}
}

// TestInstallFromClone follows the README's install recipe: a module of
// its own outside this repository, a replace directive to this checkout,
// go mod tidy (which needs the module proxy for the dependencies), and
// go test of a small test that uses mcptest. It runs in CI (CI=true) or
// with MCPSTDIO_INSTALL_TEST=1.
func TestInstallFromClone(t *testing.T) {
	if os.Getenv("CI") != "true" && os.Getenv("MCPSTDIO_INSTALL_TEST") != "1" {
		t.Skip("runs in CI (CI=true) or with MCPSTDIO_INSTALL_TEST=1: it needs the Go module proxy and builds a module of its own")
	}
	checkout, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(context.Background(), d.Add(-10*time.Second))
	}
	defer cancel()
	// module makes a module of its own outside the repository, holding
	// tryTest, and returns a runner of commands in its directory.
	module := func(t *testing.T) func(name string, args ...string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "try_test.go"), []byte(tryTest), 0o644); err != nil {
			t.Fatal(err)
		}
		return func(name string, args ...string) {
			t.Helper()
			cmd := exec.CommandContext(ctx, name, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v (context: %v)\n%s", cmd, err, ctx.Err(), out)
			}
		}
	}
	t.Run("replace", func(t *testing.T) {
		run := module(t)
		run("go", "mod", "init", "example.com/try")
		run("go", "mod", "edit", "-require", "github.com/mcpstdio/mcpstdio@v0.0.0", "-replace", "github.com/mcpstdio/mcpstdio="+checkout)
		run("go", "mod", "tidy")
		run("go", "test", "-count=1", "./...")
	})
	t.Run("workspace", func(t *testing.T) {
		run := module(t)
		run("go", "mod", "init", "example.com/try")
		run("go", "work", "init", ".", checkout)
		run("go", "test", "-count=1", "./...")
	})
}

// tryTest is the test TestInstallFromClone runs in a module of its own.
const tryTest = `package try

import (
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

func TestMain(m *testing.M) { mcptest.Main(m) }

func TestReadsWhileBlocked(t *testing.T) {
	s := mcptest.StartServer(t, mcptest.InProcess(fakeserver.New().Serve), mcptest.WithPipeCapacity(16<<10))
	assertions.AssertReadsWhileBlocked(t, s, assertions.ServerConfig{
		Large:  &assertions.ToolCall{Name: "big", Arguments: map[string]any{"bytes": 1 << 20}},
		Within: 5 * time.Second,
	})
}
`

// TestREADMEShape checks the shape of the README and docs/: the README is
// the newcomer's page, so its first test is within its first 120 lines and
// every docs/ page is linked from it. Its length is a soft budget of about
// 3,000 words, not a bound to write to: this test fails only well past it
// (3,600 words), where reference and dated measurements have crept in that
// belong in docs/ and go doc.
func TestREADMEShape(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	if n := len(strings.Fields(readme)); n > 3600 {
		t.Errorf("README.md has %d words, well past its budget of about 3,000: move reference and dated measurements to docs/", n)
	}
	first := strings.Index(readme, "func TestReadsWhileBlocked(")
	if first < 0 || strings.Count(readme[:first], "\n") >= 120 {
		t.Errorf("README.md: the first test (func TestReadsWhileBlocked) is not within the first 120 lines")
	}
	pages, err := filepath.Glob("docs/*.md")
	if err != nil || len(pages) == 0 {
		t.Fatalf("no docs/*.md pages (%v)", err)
	}
	for _, page := range pages {
		if !strings.Contains(readme, "]("+filepath.ToSlash(page)+")") {
			t.Errorf("README.md does not link %s", page)
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)#\s]+)(#[^)]*)?\)`)

// TestMarkdownLinks checks that every relative link in the Markdown names
// a file or directory of the repository.
func TestMarkdownLinks(t *testing.T) {
	for _, md := range markdownFiles(t) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mdLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(md), filepath.FromSlash(target))); err != nil {
				t.Errorf("%s: a link to %s, which is not there: %v", md, target, err)
			}
		}
	}
}
