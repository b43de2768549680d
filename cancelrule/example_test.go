package cancelrule_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpstdio/mcpstdio/cancelrule"
	"github.com/mcpstdio/mcpstdio/fakeserver"
	"github.com/mcpstdio/mcpstdio/mcptest"
)

// A call that honours its cancel stops sending progress: judged against
// what it looked like at work, the work stopped and no response came.
func Example() {
	ctx := context.Background()
	s, err := mcptest.Start(ctx, mcptest.InProcess(fakeserver.New().Serve))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	before := cancelrule.Measure(ctx, s, 0)
	p := s.Send("tools/call", map[string]any{
		"name":      fakeserver.ToolSlow,
		"arguments": map[string]any{"steps": 1000, "intervalMs": 20},
		"_meta":     map[string]any{"progressToken": "t1"},
	})
	atWork := cancelrule.Observe(ctx, s, p, before, 2*time.Second)
	seen, err := cancelrule.Watch(ctx, s, p, before, cancelrule.Config{Grace: 200 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(seen.Judge(atWork, 0).Verdict)
	// Output: stopped
}
