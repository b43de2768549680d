package assertions

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
)

// slowMark starts the evidence of a wait that ran out while the server was
// still making progress: the battery turns such a failure into a warning.
const slowMark = "slow, not stopped"

// waitProgressing waits for p's answer within a window of within; past it,
// it waits on while the server makes progress on its answers (other answers
// arrive, or stdout grows with no notification among it: a long frame on
// its way), up to 6×within in all. Notifications alone are not progress. A wait cut off at that cap while still
// progressing says so with slowMark and the rate.
func waitProgressing(ctx context.Context, s *mcptest.Session, p *mcptest.Pending, within time.Duration) (*mcptest.Response, error) {
	begin, from := time.Now(), s.Stats().StdoutBytes
	for {
		at := s.Stats()
		wctx, cancel := context.WithTimeout(ctx, within)
		resp, err := p.Wait(wctx)
		cancel()
		now := s.Stats()
		answers := now.Responses+now.UnknownIDs > at.Responses+at.UnknownIDs
		longFrame := now.StdoutBytes > at.StdoutBytes && now.Notifications == at.Notifications
		if err == nil || ctx.Err() != nil || ended(p) || !answers && !longFrame {
			return resp, err
		}
		if took := time.Since(begin); took >= 6*within {
			rate := float64(s.Stats().StdoutBytes-from) / took.Seconds()
			return resp, fmt.Errorf("%s: no answer within %v, but the server's stdout kept growing (%.1f KB/s); the bound would need to be larger: %w", slowMark, took.Round(time.Millisecond), rate/1000, err)
		}
	}
}

// slowIsWarn turns a failure whose evidence says the server was slow, not
// stopped, into a warning.
func slowIsWarn(res Result) Result {
	if res.Verdict == Fail && strings.Contains(res.Evidence, slowMark) {
		res.Verdict = Warn
	}
	return res
}
