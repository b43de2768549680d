package page

import "fmt"

// Lost is the detail the observer did not see (all of it was forwarded):
// bytes and events its drop events report, the frames marked with a gap,
// which a replay cannot check, and the requests the proxy's bounded
// pending table forgot (the summary's Metrics.Forgotten: a record without
// a summary does not say).
type Lost struct {
	Bytes     int64 `json:"bytes"`
	Events    int64 `json:"events"`
	Frames    int   `json:"gap_frames"`
	Forgotten int64 `json:"forgotten_requests,omitempty"`
}

// lostLines says in words what s.Lost holds.
func (s *Session) lostLines() []string {
	l := s.Lost
	var out []string
	if s.cut != nil {
		out = append(out, fmt.Sprintf("the record ends early: writing it failed (%s), %d events lost with that write, and nothing after it recorded", s.cut.Err, s.cut.Events))
	}
	if l == (Lost{}) {
		if s.cut != nil {
			return append(out, "the observer saw every byte until then")
		}
		return []string{"none: the observer saw every byte"}
	}
	if l.Bytes != 0 || l.Events != 0 || l.Frames != 0 {
		out = append(out, fmt.Sprintf("%s and %d events not seen by the observer (all forwarded); %d frames with gaps, which a replay cannot check", size(l.Bytes), l.Events, l.Frames))
	} else {
		out = append(out, "the observer saw every byte")
	}
	if l.Forgotten != 0 {
		out = append(out, fmt.Sprintf("%d requests forgotten by the proxy's bounded pending table: their responses, cancels and verdicts were not tracked", l.Forgotten))
	}
	return out
}
