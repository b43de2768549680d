package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/assertions"
	"github.com/mcpstdio/mcpstdio/internal/term"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// A criterion skipped for want of a tool call names the flag that would
// run it; probe then shows that flag with an example call from the
// server's own tools/list, picked by the tool's name, its arguments left
// for the user to fill in.

// callFlag is a probe flag that gives a tool call, with what it is for and
// the words of tool names that suit it, best first.
type callFlag struct {
	flag, what string
	words      []string
}

var callFlags = []callFlag{
	{"-large", "a call whose result is far larger than the pipe", []string{"big", "large", "read", "dump", "export", "get", "list", "search", "fetch", "query", "echo"}},
	{"-slow", "a call that works for seconds unless cancelled", []string{"slow", "long", "sleep", "wait", "run", "exec", "process", "search", "fetch"}},
	{"-bounded", "a call that could return a lot", []string{"search", "list", "query", "find", "read"}},
}

// tool is what probe reads of a tools/list entry.
type tool struct {
	Name        string `json:"name"`
	InputSchema struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	} `json:"inputSchema"`
}

// example is the call as -large takes it: the tool's name and its
// required arguments with placeholder values of their types.
func (t tool) example() string {
	args := map[string]any{}
	for _, name := range t.InputSchema.Required {
		switch typ, _ := t.InputSchema.Properties[name].Type.(string); typ {
		case "number", "integer":
			args[name] = 1000
		case "boolean":
			args[name] = true
		case "array":
			args[name] = []any{}
		case "object":
			args[name] = map[string]any{}
		default:
			args[name] = "…"
		}
	}
	if len(args) == 0 {
		return t.Name
	}
	b, _ := json.Marshal(args)
	return t.Name + " " + string(b)
}

// arguments names the tool's arguments, for a reader filling them in.
func (t tool) arguments() string {
	var names []string
	for name := range t.InputSchema.Properties {
		names = append(names, name)
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	return "; its arguments: " + strings.Join(names, ", ")
}

// pick returns the tool whose name holds the earliest of words, else the
// first tool.
func pick(tools []tool, words []string) tool {
	for _, w := range words {
		for _, t := range tools {
			if strings.Contains(strings.ToLower(t.Name), w) {
				return t
			}
		}
	}
	return tools[0]
}

// wantedFlags maps each call flag to the criteria of rep skipped for want
// of it, in the order of callFlags.
func wantedFlags(rep *assertions.Report) map[string][]string {
	want := map[string][]string{}
	for _, res := range rep.Results {
		if res.Verdict != assertions.Skip {
			continue
		}
		for _, f := range callFlags {
			if strings.Contains(res.Evidence, "("+f.flag+")") {
				want[f.flag] = append(want[f.flag], res.Name)
			}
		}
	}
	return want
}

// printSkipHints prints, for the criteria of rep skipped for want of a
// tool call, the flag that would run them with an example from the
// server's tools/list (one more session of target, bounded by the
// configuration's StartTimeout and Within). Nothing when none was skipped
// so, or the server lists no tools.
func printSkipHints(ctx context.Context, w io.Writer, target mcptest.Target, cfg assertions.ServerConfig, rep *assertions.Report) {
	want := wantedFlags(rep)
	if len(want) == 0 {
		return
	}
	tools, err := listTools(ctx, target, cfg)
	if err != nil || len(tools) == 0 {
		why := "it lists no tools"
		if err != nil {
			why = "tools/list: " + firstLine(err.Error())
		}
		fmt.Fprintln(w, term.Line("no example calls for the skipped criteria: "+why))
		return
	}
	fmt.Fprintln(w, "to run the criteria skipped for want of a tool call, give (examples from this server's tools/list; fill in the arguments):")
	for _, f := range callFlags {
		if names := want[f.flag]; len(names) > 0 {
			t := pick(tools, f.words)
			fmt.Fprintln(w, term.Line(fmt.Sprintf("  %s %s   %s (%s)%s", f.flag, shellQuote([]string{t.example()}), f.what, strings.Join(names, ", "), t.arguments())))
		}
	}
}

// listTools starts a session of target and returns its tools/list.
func listTools(ctx context.Context, target mcptest.Target, cfg assertions.ServerConfig) ([]tool, error) {
	opts := []mcptest.Option{mcptest.WithTimeout(max(cfg.Within, 5*time.Second)), mcptest.WithStartTimeout(max(cfg.StartTimeout, 30*time.Second))}
	if cfg.Protocol != "" {
		opts = append(opts, mcptest.WithProtocolVersion(cfg.Protocol))
	}
	s, err := mcptest.Start(ctx, target, slices.Concat(opts, cfg.Options)...)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	resp, err := s.Call(ctx, "tools/list", nil)
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var list struct {
		Tools []tool `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &list); err != nil {
		return nil, err
	}
	return list.Tools, nil
}
