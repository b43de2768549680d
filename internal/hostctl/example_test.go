package hostctl_test

import (
	"context"
	"fmt"

	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/internal/hostctl"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// A replay player reaches the session's hidden calls through hostctl.
func Example() {
	ctx := context.Background()
	s, err := mcptest.Start(ctx, mcptest.InProcess(fakeserver.New().Serve), hostctl.Grace(0).(mcptest.Option))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	p := s.Send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}})
	if _, err := p.Wait(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(hostctl.PID(s), hostctl.Stdout(s).Read > 0, hostctl.Received(p) > 0)
	// Output: 0 true true
}
