package page

import (
	"encoding/json"

	"github.com/mcpstdio/mcpstdio/record"
)

// counts are the metrics as a record's events give them, kept as the
// events are added (a live Session drops old frames, not these), for a
// record without the proxy's summary.
type counts struct {
	m        record.Metrics
	chunkEnd [3]int64 // per direction, where the last chunk ends
	frameEnd [3]int64 // per direction, where the line after the last frame starts
	heldUS   [3]int64 // per direction, time stop faults held its source, those that ended
	longest  [3]Span  // per direction, the longest blocked write that ended
}

func (c *counts) chunk(d int, e record.Event) {
	c.chunkEnd[d] = max(c.chunkEnd[d], e.Off+e.N)
}

func (c *counts) unblock(d int, e record.Event) {
	switch d {
	case 0:
		c.m.BlockedInUS += e.Dur
	case 1:
		c.m.BlockedOutUS += e.Dur
	default:
		c.m.BlockedErrUS += e.Dur
	}
	if e.Dur > c.longest[d].End-c.longest[d].Since {
		c.longest[d] = Span{Kind: "block", Dir: e.Dir, Since: e.Since, End: e.Since + e.Dur, N: e.N}
	}
}

// frame counts a frame event as the proxy counts its frames: by
// direction and kind, the largest, the junk and the unterminated.
func (c *counts) frame(e record.Event) {
	d := dirIndex(e.Dir)
	end := e.Off + e.N
	if !e.Unterminated {
		end++ // its newline
		if e.CRLF {
			end++
		}
	}
	c.frameEnd[d] = max(c.frameEnd[d], end)
	m := &c.m
	if e.Gap {
		m.GapFrames++
	}
	if e.Unterminated {
		m.Unterminated++
	}
	switch e.Dir {
	case record.DirIn:
		m.StdinFrames++
		m.LargestRequest = max(m.LargestRequest, e.N)
		switch e.Kind {
		case record.KindRequest:
			m.Requests++
		case record.KindJunk:
			m.HostParseErrors++
		}
	case record.DirOut:
		m.StdoutFrames++
		m.LargestFrame = max(m.LargestFrame, e.N)
		switch e.Kind {
		case record.KindResponse, record.KindError:
			m.Responses++
		case record.KindNotification:
			m.Notifications++
		case record.KindRequest:
			m.ServerRequests++
		case record.KindJunk:
			m.ParseErrors++
			if m.FirstJunk == "" {
				m.FirstJunk = clip(e.Head, 80)
			}
		}
	}
}

// unknown counts a response to no request awaiting one.
func (c *counts) unknown(e record.Event) {
	switch e.Dir {
	case record.DirOut:
		c.m.UnknownResponses++
		if c.m.FirstUnknown == nil {
			c.m.FirstUnknown = json.RawMessage(string(e.ID))
		}
	case record.DirIn:
		c.m.HostUnknownResponses++
		if c.m.FirstHostUnknown == nil {
			c.m.FirstHostUnknown = json.RawMessage(string(e.ID))
		}
	}
}

// stall counts a stop fault's stall that ended.
func (c *counts) stall(b Span) {
	if b.Kind == "stop" {
		c.heldUS[dirIndex(b.Dir)] += max(b.End-b.Since, 0)
	}
}

// eventMetrics returns the metrics the events give at the record's end:
// the bytes read end where the chunks (plus a write still blocked, whose
// chunk event comes when it returns) or the frames end; blocked and held
// times run to End for what has not ended.
func (s *Session) eventMetrics() *record.Metrics {
	m := s.counts.m
	read := s.counts.chunkEnd
	held := s.counts.heldUS
	for _, b := range s.Blocks {
		if b.End != 0 {
			continue
		}
		d, open := dirIndex(b.Dir), max(s.End-b.Since, 0)
		switch {
		case b.Kind == "stop":
			held[d] += open
		case b.Kind != "block":
		case d == 0:
			m.BlockedInUS += open
		case d == 1:
			m.BlockedOutUS += open
		default:
			m.BlockedErrUS += open
		}
		if b.Kind == "block" {
			read[d] += b.N
		}
	}
	for d := range read {
		read[d] = max(read[d], s.counts.frameEnd[d])
	}
	m.StdinBytes, m.StdoutBytes, m.StderrBytes = read[0], read[1], read[2]
	m.HeldInUS, m.HeldOutUS, m.HeldErrUS = held[0], held[1], held[2]
	return &m
}

// partials finds each direction's line in progress at the record's end
// (bytes read past its last frame) and gives a response in progress to
// its request, when a verdict of the proxy's named it.
func (s *Session) partials() {
	for _, r := range s.Partial {
		if i, ok := s.latest(other(r.Dir), r.ID); ok && len(r.ID) > 0 {
			s.Requests[i].RespRead, s.Requests[i].RespSent = 0, 0
		}
	}
	s.Partial = s.Partial[:0]
	for d, dir := range []string{record.DirIn, record.DirOut, record.DirErr} {
		from := s.counts.frameEnd[d]
		read := s.counts.chunkEnd[d]
		if i, ok := s.blockAt[dir]; ok {
			read += s.Blocks[i].N
		}
		if read <= from {
			continue
		}
		p := Partial{Dir: dir, Off: from, Read: read - from}
		for _, c := range s.chunks[d] {
			if c.off+c.n <= from {
				continue
			}
			if p.Since == 0 {
				p.Since = c.t
			}
			if c.wt > 0 {
				p.Delivered += c.off + c.n - max(c.off, from)
			}
		}
		if dir == record.DirOut {
			for _, l := range s.live {
				if l.V.Kind == record.VerdictHostNotReading && len(l.V.ID) > 0 && l.T >= p.Since {
					p.ID = l.V.ID
				}
			}
		}
		if i, ok := s.latest(record.DirIn, p.ID); ok && len(p.ID) > 0 && s.Requests[i].Response < 0 {
			s.Requests[i].RespRead, s.Requests[i].RespSent = p.Read, p.Delivered
		}
		s.Partial = append(s.Partial, p)
	}
}
