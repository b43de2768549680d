package page

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestLostForgotten: a summary whose proxy forgot requests from its bounded
// pending table does not say that no detail was lost: show's text and HTML
// count the forgotten requests under "lost detail".
func TestLostForgotten(t *testing.T) {
	t.Parallel()
	rec, err := os.ReadFile(sessionRecord)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(rec, []byte(`"forgotten":0`)) != 1 {
		t.Fatalf("%s: want one summary with forgotten 0", sessionRecord)
	}
	s, err := Read(bytes.NewReader(bytes.Replace(rec, []byte(`"forgotten":0`), []byte(`"forgotten":84`), 1)))
	if err != nil {
		t.Fatal(err)
	}
	var text, html bytes.Buffer
	if err := s.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteHTML(&html, "r"); err != nil {
		t.Fatal(err)
	}
	const want = "84 requests forgotten by the proxy"
	for what, got := range map[string]string{"text": text.String(), "html": html.String()} {
		if strings.Contains(got, "none: the observer saw every byte") || !strings.Contains(got, want) {
			t.Errorf("%s: lost detail does not say %q:\n%s", what, want, got)
		}
	}
}
