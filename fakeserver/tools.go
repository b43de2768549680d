package fakeserver

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// Tool names, as listed by tools/list and called by tools/call (all offered
// unless WithTools says otherwise):
//
//   - echo: returns its text at once (the "second request").
//   - big: a payload of an exact size, as one text field, many blocks or
//     structuredContent, made of ASCII, multibyte UTF-8, quotes and
//     backslashes, or escaped newlines, written in chunks; FrameSize makes
//     the whole response line exactly that many bytes (see BigArgs).
//   - slow: progress notifications at a caller-given interval.
//   - subprocess: a real child writing a given number of bytes to stdout
//     and stderr, drained through pipes.Capture; killed with its process
//     group on cancel.
//   - remote: chunks streamed from a loopback httptest.Server at a given
//     interval; the HTTP request is aborted on cancel.
//   - search: the good result contract (bounded page of 50 of 4382
//     records by default, at most 200; nextCursor, truncated,
//     totalEstimate only when known).
const (
	ToolEcho       = "echo"
	ToolBig        = "big"
	ToolSlow       = "slow"
	ToolSubprocess = "subprocess"
	ToolRemote     = "remote"
	ToolSearch     = "search"
)

// toolTable defines each tool once: its name, description, arguments (the
// fields of its argument struct, by their JSON names, make its input schema)
// and what it does. tools/list lists them in this order.
var toolTable = []tool{
	newTool(ToolEcho, "Returns its text argument at once.", (*Server).toolEcho),
	newTool(ToolBig, "Returns a payload of an exact size: bytes of text, or frameSize bytes for the whole response line; see fakeserver.BigArgs.", (*Server).toolBig),
	newTool(ToolSlow, "Makes steps progress notifications, intervalMs apart; honours cancel.", (*Server).toolSlow),
	newTool(ToolSubprocess, "Runs a child writing stdoutBytes and stderrBytes, drained through a bounded capture; hold keeps it running until cancelled.", (*Server).toolSubprocess),
	newTool(ToolRemote, "Streams chunks of chunkBytes from a loopback HTTP source, intervalMs apart; cancel aborts the request.", (*Server).toolRemote),
	newTool(ToolSearch, "Searches total records and returns a bounded page with nextCursor and truncated.", (*Server).toolSearch),
}

// Tools returns the names of every tool a Server can offer, in the order
// tools/list returns them.
func Tools() []string {
	names := make([]string, len(toolTable))
	for i, t := range toolTable {
		names[i] = t.Name
	}
	return names
}

// tool is one tool: its tools/list entry and its work, which returns the
// response frame, or an error of its context when cancelled.
type tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	InputSchema map[string]any `json:"inputSchema"`
	args        reflect.Type   // the argument struct
	run         func(s *Server, w *work) (*frame, error)
}

// newTool makes a tool whose arguments decode into an A.
func newTool[A any](name, desc string, fn func(s *Server, w *work, a A) (*frame, error)) tool {
	return tool{Name: name, Description: desc, InputSchema: schemaOf(reflect.TypeFor[A]()), args: reflect.TypeFor[A](),
		run: func(s *Server, w *work) (*frame, error) {
			var a A
			if err := args(w, &a); err != nil {
				return nil, err
			}
			return fn(s, w, a)
		}}
}

// schemaOf is the JSON schema of an argument struct: an object with a
// property for each field, named by its json tag.
func schemaOf(t reflect.Type) map[string]any {
	props := map[string]any{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		k := f.Type.Kind()
		if k == reflect.Pointer {
			k = f.Type.Elem().Kind()
		}
		typ := map[reflect.Kind]string{reflect.String: "string", reflect.Bool: "boolean", reflect.Int: "integer", reflect.Int64: "integer"}[k]
		if name == "" || typ == "" || f.Tag.Get("help") == "" {
			panic(fmt.Sprintf("fakeserver: argument %s.%s has no json name, no schema type or no help", t, f.Name))
		}
		props[name] = map[string]any{"type": typ}
	}
	return map[string]any{"type": "object", "properties": props}
}

// toolsHelp lists every tool with what it does and its arguments, by their
// JSON names, types and what each means, for `fake -h`.
func toolsHelp() string {
	var b strings.Builder
	for _, t := range toolTable {
		fmt.Fprintf(&b, "  %s\n    \t%s\n", t.Name, t.Description)
		for i := range t.args.NumField() {
			f := t.args.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			typ := t.InputSchema["properties"].(map[string]any)[name].(map[string]any)["type"]
			fmt.Fprintf(&b, "    \t%s (%s): %s\n", name, typ, f.Tag.Get("help"))
		}
	}
	return b.String()
}

type echoArgs struct {
	Text string `json:"text" help:"the text to return"`
}

func (s *Server) toolEcho(w *work, a echoArgs) (*frame, error) {
	return textResult(w, a.Text, nil), nil
}

// toolSlow makes steps progress notifications (when the request has a
// progressToken), the first at once and the others intervalMs apart.
type slowArgs struct {
	Steps      int `json:"steps" help:"progress notifications to make (at least 1)"`
	IntervalMs int `json:"intervalMs" help:"milliseconds between them"`
}

func (s *Server) toolSlow(w *work, a slowArgs) (*frame, error) {
	steps := max(a.Steps, 1)
	for i := 1; i <= steps; i++ {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		s.progress(w, float64(i), float64(steps), fmt.Sprintf("slow: step %d of %d", i, steps))
		if i < steps {
			if err := bound.Pass(w.ctx, time.Duration(a.IntervalMs)*time.Millisecond); err != nil {
				return nil, err
			}
		}
	}
	return textResult(w, fmt.Sprintf("slow: %d steps done", steps), nil), nil
}

// Search limits.
const (
	// searchDefaultTotal is how many records the search tool's data set has
	// unless the call says otherwise (the totalEstimate of the paged search
	// result the project's source article shows).
	searchDefaultTotal = 4382
	// searchDefaultPage and searchMaxPage bound a page of results.
	searchDefaultPage = 50
	searchMaxPage     = 200
)

type searchArgs struct {
	Query      string `json:"query" help:"words to match (any)"`
	Cursor     string `json:"cursor" help:"the nextCursor of the previous page"`
	PageSize   int    `json:"pageSize" help:"records per page (default 50, at most 200)"`
	Total      *int   `json:"total" help:"records in the data set (default 4382)"`
	CountKnown *bool  `json:"countKnown" help:"false: the total is not known, no totalEstimate (default true)"`
}

// toolSearch is the good result contract: a bounded page of items,
// nextCursor and truncated when cut, totalEstimate only when the count is
// known exactly, and a text saying what was omitted and how to continue.
// With Faults.UnboundedResults it returns everything at once (the naive
// tool).
func (s *Server) toolSearch(w *work, a searchArgs) (*frame, error) {
	total := searchDefaultTotal
	if a.Total != nil {
		total = max(*a.Total, 0)
	}
	countKnown := a.CountKnown == nil || *a.CountKnown
	start := 0
	if a.Cursor != "" {
		n, err := strconv.Atoi(strings.TrimPrefix(a.Cursor, "offset:"))
		if err != nil || !strings.HasPrefix(a.Cursor, "offset:") || n < 0 || n > total {
			return nil, argError(fmt.Sprintf("search: invalid cursor %q", a.Cursor))
		}
		start = n
	}
	page := min(cmpOr(a.PageSize, searchDefaultPage), searchMaxPage)
	if s.cfg.faults.UnboundedResults {
		page = total - start
	}
	end := min(start+page, total)
	items := make([]any, 0, end-start)
	for i := start; i < end; i++ {
		if err := w.ctx.Err(); err != nil {
			return nil, err
		}
		items = append(items, map[string]any{"id": fmt.Sprintf("rec-%06d", i), "title": fmt.Sprintf("record %d matching %q", i, a.Query)})
	}
	sc := map[string]any{"items": items}
	var text string
	truncated := end < total
	if truncated {
		cursor := fmt.Sprintf("offset:%d", end)
		sc["nextCursor"] = cursor
		sc["truncated"] = true
		if countKnown {
			text = fmt.Sprintf("Returned %d of %d matching records (%d to %d); %d omitted. Call search again with cursor %q to continue.", len(items), total, start+1, end, total-end, cursor)
		} else {
			text = fmt.Sprintf("Returned %d matching records (%d to %d); more exist. Call search again with cursor %q to continue.", len(items), start+1, end, cursor)
		}
	} else {
		text = fmt.Sprintf("Returned %d matching records (%d to %d); nothing omitted.", len(items), start+1, end)
	}
	if countKnown {
		sc["totalEstimate"] = total
	}
	return textResult(w, text, sc), nil
}
