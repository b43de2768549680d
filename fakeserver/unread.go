package fakeserver

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// unreadPeekLimit bounds the unread bytes of stdin looked at for cancels.
const unreadPeekLimit = 1 << 20

// noteUnread records what stdin holds that the server has not read: how
// many bytes, and the notifications/cancelled among them. ServeStdio calls
// it at each signal it catches and as it closes stdin, so that a cancel the
// host wrote just before it ended the server shows in the report although
// the server never read it (Report.StdinUnread, Report.UnreadCancels).
func (s *Server) noteUnread(stdin *os.File) {
	b, n := peekUnread(stdin, unreadPeekLimit)
	if n <= 0 {
		return
	}
	now := time.Now()
	var cancels []CancelRecord
	for _, line := range bytes.Split(b, []byte("\n")) {
		m, err := wire.ParseMessage(line)
		if err != nil || m.Method != wire.MethodCancelled || !m.IsNotification() {
			continue
		}
		if id := wire.Key(wire.Member(m.Params, "requestId")); id != "" {
			rec := CancelRecord{ID: id, Arrived: now, State: StateUnknown}
			json.Unmarshal(wire.Member(m.Params, "reason"), &rec.Reason) // a reason that is not a string is left out
			cancels = append(cancels, rec)
		}
	}
	s.update(func(r *Report) {
		r.StdinUnread = int64(n)
		for _, c := range cancels {
			if !slices.ContainsFunc(r.UnreadCancels, func(u CancelRecord) bool { return u.ID == c.ID }) {
				r.UnreadCancels = append(r.UnreadCancels, c)
			}
		}
	})
}
