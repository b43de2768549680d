package page

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The tags and attributes the pages write; a record can add none.
var (
	htmlTags  = regexp.MustCompile(`^</?(html|head|meta|title|style|body|header|h1|h2|div|main|ul|li|svg|g|rect|text|line|path|table|tr|th|td|p|section|details|summary|pre|script|span|i|b)[\s/>]`)
	attrName  = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*$`)
	attrAllow = regexp.MustCompile(`^(class|id|lang|charset|http-equiv|content|type|xmlns|viewBox|width|height|x|y|x1|x2|y1|y2|d|transform|text-anchor|data-[a-z-]+)$`)
)

// checkMarkup checks that html (the report, or the live timeline) holds
// only the tags and attributes the pages write, every attribute value
// quoted: what a record adds is text, never markup.
func checkMarkup(t *testing.T, html string) {
	t.Helper()
	html = strings.Replace(strings.Replace(html, "<script>"+reportJS, "<script>", 1), "<style>"+pageCSS, "<style>", 1)
	if i := strings.Index(html, `<script id="frames" type="application/json">`); i >= 0 {
		j := strings.Index(html[i:], "</script>")
		if j < 0 {
			t.Fatal("the frames data block is not closed")
		}
		if strings.Contains(html[i+1:i+j], "<") {
			t.Fatal("the frames data block holds a <")
		}
		html = html[:i] + html[i+j:]
	}
	for rest := html; ; {
		i := strings.IndexByte(rest, '<')
		if i < 0 {
			return
		}
		rest = rest[i:]
		if strings.HasPrefix(rest, "<!doctype html>") {
			rest = rest[1:]
			continue
		}
		if !htmlTags.MatchString(rest) {
			t.Fatalf("a tag the pages do not write: %.120q", rest)
		}
		end := strings.IndexByte(rest, '>')
		if end < 0 {
			t.Fatalf("an unclosed tag: %.120q", rest)
		}
		tag := rest[:end]
		parts := strings.Split(tag, `"`)
		if len(parts)%2 == 0 {
			t.Fatalf("an unbalanced quote in %q", tag)
		}
		for k := 0; k < len(parts); k += 2 { // outside the quoted values
			fields := strings.Fields(parts[k])
			if k == 0 && len(fields) > 0 {
				fields = fields[1:] // the tag's name
			}
			for _, f := range fields {
				name := strings.TrimSuffix(f, "=")
				if name == "/" {
					continue
				}
				if !attrName.MatchString(name) || !attrAllow.MatchString(name) || !strings.HasSuffix(f, "=") && k+1 < len(parts) {
					t.Fatalf("an attribute the pages do not write, %q, in %.200q", f, tag)
				}
			}
		}
		rest = rest[end:]
	}
}

// FuzzModel: any record (lines of events, broken or hostile) is read, and
// written as text, HTML and a live timeline, without a panic or a hang;
// the text holds no raw control character and the HTML no markup but the
// pages' own.
func FuzzModel(f *testing.F) {
	f.Add(hostileRecord())
	f.Add(hugeRecord())
	for _, p := range []string{sampleRecord, sessionRecord} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"seq":0,"t":1,"ev":"frame","dir":"in","kind":"request","id":1,"method":"ping"}` + "\n" +
		`{"seq":1,"t":2,"ev":"cancel","dir":"in","id":"x","state":"unknown"}` + "\n" +
		`{"seq":2,"t":3,"ev":"late","dir":"out","id":"x","after":1}` + "\n" +
		`{"seq":3,"t":9223372036854775807,"ev":"block","dir":"x\" onfocus=\"a","since":-9223372036854775808}` + "\n"))
	f.Fuzz(func(t *testing.T, rec []byte) {
		s, _ := Read(bytes.NewReader(rec))
		var text, html bytes.Buffer
		if err := s.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		for _, r := range text.String() {
			if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Fatalf("the text holds the control character %U", r)
			}
		}
		if err := s.WriteHTML(&html, "fuzz"); err != nil {
			t.Fatal(err)
		}
		checkMarkup(t, html.String())
		checkMarkup(t, s.timeline(max(s.End-120e6, 0), max(s.End, 1), s.End).SVG)
	})
}
