package page

import "github.com/mcpstdio/mcpstdio/record"

// MaxTime is the latest time (µs since the session started) a page draws:
// about 100 years. A record's times outside 0…MaxTime (a crafted or broken
// record) are shown as the nearer end and counted in Session.Clamped, so
// that no sum or axis over them can overflow.
const MaxTime = int64(100 * 365 * 24 * 3600 * 1e6)

// clampTimes brings e's times into 0…MaxTime, counting each one moved.
func (s *Session) clampTimes(e *record.Event) {
	for _, p := range []*int64{&e.T, &e.T0, &e.WT, &e.Since, &e.Dur, &e.After} {
		if *p < 0 || *p > MaxTime {
			*p = min(max(*p, 0), MaxTime)
			s.Clamped++
		}
	}
	if e.Since+e.Dur > MaxTime {
		e.Dur = MaxTime - e.Since
		s.Clamped++
	}
}

// clampedNote says how many times were clamped, "" if none.
func (s *Session) clampedNote() string {
	if s.Clamped == 0 {
		return ""
	}
	what := " times in the record were"
	if s.Clamped == 1 {
		what = " time in the record was"
	}
	return itoa(int64(s.Clamped)) + what + " outside 0 to 100 years, shown as the nearer end (the record is broken or crafted)"
}
