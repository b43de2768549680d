package assertions

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// SessionHost is a HostFactory for this library's own host, mcptest.Session,
// started with opts: the reference a host under test can be compared with,
// and proof that the criteria can be met.
func SessionHost(opts ...mcptest.Option) HostFactory {
	return func(ctx context.Context, cmd *exec.Cmd) (Host, error) {
		all := opts
		if dl, ok := ctx.Deadline(); ok {
			// The battery bounds the start (StartTimeout): the
			// handshake need not end sooner.
			all = append([]mcptest.Option{mcptest.WithStartTimeout(time.Until(dl))}, opts...)
		}
		s, err := mcptest.Start(ctx, mcptest.Exec(cmd), all...)
		if err != nil {
			return nil, err
		}
		return sessionHost{s, new(sync.WaitGroup)}, nil
	}
}

type sessionHost struct {
	s       *mcptest.Session
	cancels *sync.WaitGroup // the cancels CallTool sends on their own
}

func (h sessionHost) CallTool(ctx context.Context, name string, args map[string]any) (json.RawMessage, error) {
	p := h.s.Send(wire.MethodToolsCall, map[string]any{"name": name, "arguments": args})
	resp, err := p.Wait(ctx)
	if err != nil {
		// Abandoning a request (its context ended, or the session's own
		// timeout, WithTimeout, passed) means cancelling it. The cancel
		// goes out on its own, as hosts send it, and the call returns at
		// once: to a server that stopped reading stdin, its write would
		// wait out the session's timeout a second time.
		h.cancels.Add(1)
		go func() {
			defer h.cancels.Done()
			_ = p.Cancel(firstLine(err.Error()))
		}()
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	return resp.Result, nil
}

// Close ends the session; a cancel still being written ends with it.
func (h sessionHost) Close() error {
	err := h.s.Close()
	h.cancels.Wait()
	return err
}

// ListTools lists the server's tools, for large-tools-list.
func (h sessionHost) ListTools(ctx context.Context) ([]string, error) {
	resp, err := h.s.Send(wire.MethodToolsList, map[string]any{}).Wait(ctx)
	if err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, resp.Error
	}
	var out struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &out); err != nil {
		return nil, fmt.Errorf("tools/list result: %v", err)
	}
	names := make([]string, len(out.Tools))
	for i, t := range out.Tools {
		names[i] = t.Name
	}
	return names, nil
}
