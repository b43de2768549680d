package atomicfile_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
	"github.com/mcpstdio/mcpstdio/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m, goleak.Cleanup(testkit.Exit)) }

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	for _, want := range []string{"old", "new"} {
		if err := atomicfile.Write(path, []byte(want)); err != nil {
			t.Fatal(err)
		}
		if b, err := os.ReadFile(path); err != nil || string(b) != want {
			t.Fatalf("read %q, %v; want %q", b, err, want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d files in the directory, want only f.json (no temporary left)", len(ents))
	}
	if err := atomicfile.Write(filepath.Join(dir, "missing", "f"), nil); err == nil {
		t.Error("Write into a missing directory: no error")
	}
}

func Example() {
	path := filepath.Join(os.TempDir(), "atomicfile-example.json")
	defer os.Remove(path)
	if err := atomicfile.Write(path, []byte(`{"ok":true}`)); err != nil {
		fmt.Println(err)
	}
	b, _ := os.ReadFile(path)
	fmt.Println(string(b))
	// Output: {"ok":true}
}
