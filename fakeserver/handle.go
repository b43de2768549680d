package fakeserver

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Versions the server knows, newest first.
var (
	modernVersions = []string{wire.Version20260728}
	legacyVersions = []string{wire.Version20251125, wire.Version20250618}
)

// serverName and serverVersion identify the fake in initialize and
// server/discover results.
const (
	serverName    = "mcpstdio-fakeserver"
	serverVersion = "0.1.0"
)

func (s *Server) supported() []string {
	switch s.cfg.era {
	case EraModern:
		return modernVersions
	case EraLegacy:
		return legacyVersions
	}
	return append(slices.Clone(modernVersions), legacyVersions...)
}

type unsupportedData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// handle runs a request's work and returns its response frame.
func (s *Server) handle(w *work) *frame {
	if w.perr != nil {
		return errorFrame(w.rawID, wire.CodeInvalidParams, "params: "+w.perr.Error(), nil)
	}
	if s.cfg.faults.NoHandshake && (w.method == wire.MethodInitialize || w.method == wire.MethodDiscover) {
		<-w.ctx.Done()
		return s.cancelledFrame(w)
	}
	if w.modern {
		if !slices.Contains(modernVersions, w.version) {
			return errorFrame(w.rawID, wire.CodeUnsupportedProtocolVersion, "Unsupported protocol version",
				unsupportedData{Supported: s.supported(), Requested: w.version})
		}
		switch w.method {
		case wire.MethodDiscover:
			return s.discover(w)
		case wire.MethodToolsList:
			return s.toolsList(w)
		case wire.MethodToolsCall:
			return s.toolsCall(w)
		case wire.MethodInitialize, wire.MethodPing:
			return errorFrame(w.rawID, wire.CodeMethodNotFound, fmt.Sprintf("method %q is not part of protocol version %s", w.method, w.version), nil)
		}
		return errorFrame(w.rawID, wire.CodeMethodNotFound, fmt.Sprintf("method %q not found", w.method), nil)
	}
	if s.cfg.era == EraModern {
		requested := w.params.ProtocolVersion
		return errorFrame(w.rawID, wire.CodeUnsupportedProtocolVersion,
			fmt.Sprintf("Unsupported protocol version: this server speaks only %s and needs params._meta[%q] on every request", wire.Version20260728, wire.MetaProtocolVersion),
			unsupportedData{Supported: s.supported(), Requested: requested})
	}
	switch w.method {
	case wire.MethodInitialize:
		v := w.params.ProtocolVersion
		if !slices.Contains(legacyVersions, v) {
			v = legacyVersions[0]
		}
		return resultFrame(w, map[string]any{
			"protocolVersion": v,
			"capabilities":    map[string]any{"tools": map[string]any{}},
			"serverInfo":      map[string]any{"name": serverName, "version": serverVersion},
		})
	case wire.MethodPing:
		return resultFrame(w, map[string]any{})
	case wire.MethodToolsList:
		return s.toolsList(w)
	case wire.MethodToolsCall:
		return s.toolsCall(w)
	case wire.MethodDiscover:
		return errorFrame(w.rawID, wire.CodeMethodNotFound, fmt.Sprintf("method %q needs params._meta[%q] (protocol version %s)", w.method, wire.MetaProtocolVersion, wire.Version20260728), nil)
	}
	return errorFrame(w.rawID, wire.CodeMethodNotFound, fmt.Sprintf("method %q not found", w.method), nil)
}

func (s *Server) discover(w *work) *frame {
	return resultFrame(w, map[string]any{
		"supportedVersions": s.supported(),
		"capabilities":      map[string]any{"tools": map[string]any{}},
		"ttlMs":             0,
		"cacheScope":        "private",
		"_meta": map[string]any{
			"io.modelcontextprotocol/serverInfo": map[string]any{"name": serverName, "version": serverVersion},
		},
	})
}

func (s *Server) toolsList(w *work) *frame {
	var tools []any
	for _, t := range s.tools {
		tools = append(tools, t)
	}
	r := map[string]any{"tools": s.fillerTools(tools)}
	if w.modern {
		r["ttlMs"] = 0
		r["cacheScope"] = "private"
	}
	return resultFrame(w, r)
}

func (s *Server) toolsCall(w *work) *frame {
	if f, ok := s.hostCall(w); ok {
		return f
	}
	name := w.params.Name
	i := slices.IndexFunc(s.tools, func(t tool) bool { return t.Name == name })
	if i < 0 && s.cfg.faults.Call != "" {
		i = slices.IndexFunc(s.tools, func(t tool) bool { return t.Name == ToolEcho })
	}
	if i < 0 {
		return errorFrame(w.rawID, wire.CodeInvalidParams, fmt.Sprintf("unknown tool %q", name), nil)
	}
	f, err := s.tools[i].run(s, w)
	if err != nil {
		if w.ctx.Err() != nil {
			return s.cancelledFrame(w)
		}
		if ae, ok := err.(argError); ok {
			return errorFrame(w.rawID, wire.CodeInvalidParams, string(ae), nil)
		}
		return toolError(w, err)
	}
	return f
}

// argError is a bad tool argument: a JSON-RPC -32602 error.
type argError string

func (e argError) Error() string { return string(e) }

// args decodes a tool's arguments into v.
func args(w *work, v any) error {
	if len(w.params.Arguments) == 0 {
		return nil
	}
	if err := json.Unmarshal(w.params.Arguments, v); err != nil {
		return argError(fmt.Sprintf("tool %q: arguments: %v", w.params.Name, err))
	}
	return nil
}

func textResult(w *work, text string, structured any) *frame {
	r := map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
	if structured != nil {
		r["structuredContent"] = structured
	}
	return resultFrame(w, r)
}

// toolError is a tool execution error: a result with isError.
func toolError(w *work, err error) *frame {
	return resultFrame(w, map[string]any{
		"content": []any{map[string]any{"type": "text", "text": err.Error()}},
		"isError": true,
	})
}

// progress writes a notifications/progress for w if its request asked for
// progress and it has not been cancelled: after a cancel the server sends
// nothing more for the request.
func (s *Server) progress(w *work, progress, total float64, msg string) {
	tok, ok := w.params.Meta["progressToken"]
	if !ok {
		return
	}
	p := map[string]any{"progressToken": tok, "progress": progress}
	if total > 0 {
		p["total"] = total
	}
	if msg != "" {
		p["message"] = msg
	}
	b := marshal(map[string]any{"jsonrpc": "2.0", "method": wire.MethodProgress, "params": p})
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if w.ctx.Err() != nil {
		return
	}
	s.out.write(append(b, '\n'))
}
