package mcptest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/hostctl"
)

// The calls only this module's replay players and criteria batteries use
// (package internal/hostctl): not part of the API.
func init() {
	hostctl.Changed = func(s any) <-chan struct{} { return s.(*Session).changedChan() }
	hostctl.Expect = func(s any, id int64, method string, params json.RawMessage) (any, error) {
		p, err := s.(*Session).expect(id, method, params)
		if err != nil {
			return nil, err
		}
		return p, nil
	}
	hostctl.Stdout = func(s any) hostctl.StdoutState { return s.(*Session).stdoutState() }
	hostctl.StallReadsAfter = func(s any, n int64) { s.(*Session).stallReadsAfter(n) }
	hostctl.WaitStdoutBytes = func(ctx context.Context, s any, n int64) error { return s.(*Session).waitStdoutBytes(ctx, n) }
	hostctl.Stderr = func(s any) []byte { return s.(*Session).stderrBytes() }
	hostctl.PID = func(s any) int { return s.(*Session).processID() }
	hostctl.Progress = func(p any) int64 { return p.(*Pending).progressCount() }
	hostctl.Received = func(p any) int64 { return p.(*Pending).received() }
	hostctl.ProbeTimeout = func(d time.Duration) any { return probeTimeout(d) }
	hostctl.StartTimeout = func(d time.Duration) any { return startTimeout(d) }
	hostctl.Grace = func(d time.Duration) any { return grace(d) }
}
