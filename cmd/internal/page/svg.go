package page

import (
	"fmt"
	"html"
	"sort"
	"strings"
)

// The timeline's geometry, in SVG user units (the SVG scales to the page).
const (
	svgWidth   = 1200
	svgLeft    = 120 // lane labels
	svgRight   = 10
	laneHeight = 34
	rowHeight  = 13
	maxRows    = 14   // request rows; requests beyond them are counted
	maxMarks   = 1500 // frames per lane drawn one by one; more are binned
	maxSpans   = 300  // request spans drawn; the rest are counted
)

// view is what a timeline draws: the window [from, to] of a Session, and
// the frames that carry detail for a click (Detail[i] is data-f="i").
type view struct {
	SVG    string
	Detail []Frame
	Folded []string // what was folded or sampled, in words
	have   map[int64]bool
}

// detail adds f to the frames a click can show and returns its index.
func (v *view) detail(f Frame) int {
	if v.have == nil {
		v.have = map[int64]bool{}
	}
	v.have[f.Seq] = true
	v.Detail = append(v.Detail, f)
	return len(v.Detail) - 1
}

type svgWriter struct {
	b        strings.Builder
	from, to int64
	v        *view
}

func (w *svgWriter) x(t int64) float64 {
	if w.to <= w.from {
		return svgLeft
	}
	t = min(max(t, w.from), w.to)
	return svgLeft + float64(t-w.from)*float64(svgWidth-svgLeft-svgRight)/float64(w.to-w.from)
}

func (w *svgWriter) printf(format string, a ...any) { fmt.Fprintf(&w.b, format, a...) }

// esc is the one escape of the HTML pages: every string that came from a
// record or a status file goes through it, in text and in attribute
// values alike (it escapes & < > " and ').
func esc(s string) string { return html.EscapeString(s) }

// timeline draws s between from and to (µs). now > 0 is a live view: what
// has not ended (blocks, pending requests) is drawn up to now.
func (s *Session) timeline(from, to, now int64) view {
	v := view{}
	w := &svgWriter{from: from, to: to, v: &v}
	end := s.End
	if now > 0 {
		end = now
	}
	// Spans: the unfinished, cancelled, late or failed ones, then the
	// slowest, at most maxSpans; their frames are drawn one by one
	// whatever else is binned, the frames of requests not drawn are not.
	notable := func(r Request) bool { return r.State != "delivered" || r.Cancel > 0 || r.LateUS > 0 || r.Error }
	var reqs []int
	for i, r := range s.Requests {
		if spanEnd(r, end) < from || r.Sent > to {
			continue
		}
		reqs = append(reqs, i)
	}
	if len(reqs) > maxSpans {
		var notes, others []int
		for _, i := range reqs {
			if notable(s.Requests[i]) {
				notes = append(notes, i)
			} else {
				others = append(others, i)
			}
		}
		if len(notes) > maxSpans { // the oldest half and the latest half
			notes = append(notes[:maxSpans/2:maxSpans/2], notes[len(notes)-maxSpans/2:]...)
		}
		sort.SliceStable(others, func(i, j int) bool {
			a, b := s.Requests[others[i]], s.Requests[others[j]]
			return spanEnd(a, end)-a.Sent > spanEnd(b, end)-b.Sent
		})
		v.Folded = append(v.Folded, fmt.Sprintf("%d requests drawn as spans (unfinished, cancelled, late or failed ones, the oldest and the latest, then the slowest); %d others only as frames (columns of counts when there are many)", maxSpans, len(reqs)-maxSpans))
		reqs = append(notes, others[:maxSpans-len(notes)]...)
		sort.Ints(reqs)
	}
	important := map[int]bool{}
	for _, i := range reqs {
		if r := s.Requests[i]; notable(r) {
			important[r.Frame] = true
			if r.Response >= 0 {
				important[r.Response] = true
			}
		}
	}
	rows := packRows(s.Requests, reqs, end, w)
	nrows := 0
	for _, r := range rows {
		nrows = max(nrows, r+1)
	}
	lanesTop := 22
	reqTop := lanesTop + 3*laneHeight + 8
	height := reqTop + max(nrows, 1)*rowHeight + 26
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" class="timeline" viewBox="0 0 %d %d" width="100%%" data-from="%d" data-to="%d">`, svgWidth, height, from, to)
	w.axis(height)
	names := []struct{ dir, label string }{{"in", "host → server"}, {"out", "server → host"}, {"err", "stderr"}}
	for li, l := range names {
		y := lanesTop + li*laneHeight
		w.printf(`<g class="lane" data-dir="%s"><rect class="lanebg" x="%d" y="%d" width="%d" height="%d"/><text class="label" x="4" y="%d">%s</text>`,
			l.dir, svgLeft, y, svgWidth-svgLeft-svgRight, laneHeight-4, y+laneHeight/2+2, l.label)
		s.drawBlocks(w, l.dir, y, end)
		s.drawFrames(w, l.dir, y, important)
		w.printf(`</g>`)
	}
	w.printf(`<text class="label" x="4" y="%d">requests</text>`, reqTop+9)
	for k, i := range reqs {
		s.drawSpan(w, i, reqTop+rows[k]*rowHeight, end)
		r := s.Requests[i]
		for _, fi := range []int{r.Frame, r.Response} {
			if fi >= 0 && !v.have[s.Frames[fi].Seq] {
				v.detail(s.Frames[fi])
			}
		}
	}
	if len(reqs) == 0 {
		w.printf(`<text class="note" x="%d" y="%d">no request in this window</text>`, svgLeft+4, reqTop+9)
	}
	s.drawMarks(w, lanesTop, reqTop+max(nrows, 1)*rowHeight)
	if now > 0 {
		x := w.x(now)
		w.printf(`<line class="now" x1="%.1f" x2="%.1f" y1="12" y2="%d"/>`, x, x, height-14)
	}
	w.printf(`</svg>`)
	v.SVG = w.b.String()
	return v
}

func spanEnd(r Request, end int64) int64 {
	if r.Delivered > 0 {
		return r.Delivered
	}
	if r.RespEnd > 0 && r.State == "delivered" {
		return r.RespEnd
	}
	return end
}

// packRows gives each drawn request a row: the first row free at its
// start, wrapping round when there are more than maxRows at once.
func packRows(all []Request, reqs []int, end int64, w *svgWriter) []int {
	rows := make([]int, len(reqs))
	var free []float64 // per row, the x where it is free
	for k, i := range reqs {
		r := all[i]
		x0, x1 := w.x(r.Sent), w.x(spanEnd(r, end))
		row := -1
		for j, f := range free {
			if f <= x0 {
				row = j
				break
			}
		}
		if row < 0 {
			if len(free) < maxRows {
				free = append(free, 0)
				row = len(free) - 1
			} else {
				row = k % maxRows
			}
		}
		free[row] = x1 + 2
		rows[k] = row
	}
	return rows
}

func (w *svgWriter) axis(height int) {
	span := w.to - w.from
	if span <= 0 {
		return
	}
	step := niceStep(span / 8)
	first := w.from + (step-w.from%step)%step // the first multiple of step at or after from
	// At most 9 ticks (step ≥ span/8); counted, and stopped before t+step
	// could overflow, whatever from and to are.
	for t, n := first, 0; t <= w.to && n < 10; t, n = t+step, n+1 {
		x := w.x(t)
		w.printf(`<line class="tick" x1="%.1f" x2="%.1f" y1="14" y2="%d"/><text class="axis" x="%.1f" y="11">%s</text>`, x, x, height-14, x, at(t))
		if t > w.to-step {
			break
		}
	}
}

// niceStep rounds d (µs) up to 1, 2 or 5 times a power of ten (at most
// 5e18, which is at least d for any d a span over int64 divided by 8 gives).
func niceStep(d int64) int64 {
	step := int64(1)
	for step < 1e18 {
		for _, m := range []int64{1, 2, 5} {
			if step*m >= d {
				return step * m
			}
		}
		step *= 10
	}
	return step * 5
}

func (s *Session) drawBlocks(w *svgWriter, dir string, y int, end int64) {
	for _, b := range s.Blocks {
		if b.Dir != dir {
			continue
		}
		e := b.End
		open := e == 0
		if open {
			e = end
		}
		if e < w.from || b.Since > w.to {
			continue
		}
		x0, x1 := w.x(b.Since), w.x(e)
		label := size(b.N) + " blocked " + dur(e-b.Since)
		title := fmt.Sprintf("a write of %s to %s blocked from %s for %s", size(b.N), destName(b.Dir), at(b.Since), dur(e-b.Since))
		if open {
			label += " (still)"
			title += ", not ended"
		}
		if b.Kind != "block" {
			label = "fault " + b.Kind + " " + dur(e-b.Since)
			title = fmt.Sprintf("fault %s:%s: %s, from %s for %s", b.Dir, b.Kind, b.Text, at(b.Since), dur(e-b.Since))
		}
		w.printf(`<g class="%s" data-since="%d" data-end="%d" data-bytes="%d"><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d"/>`,
			barClass(b), b.Since, b.End, b.N, esc(title), x0, y+15, max(x1-x0, 2), laneHeight-19)
		if x1-x0 > 60 {
			w.printf(`<text class="barlabel" x="%.1f" y="%d">%s</text>`, x0+3, y+laneHeight-7, esc(label))
		}
		w.printf(`</g>`)
	}
}

func barClass(b Span) string {
	if b.Kind == "block" {
		return "block"
	}
	return "stall"
}

// drawFrames draws one lane's frames: each as a mark when there are at most
// maxMarks in the window, else in columns of counts, the important frames
// still as marks.
func (s *Session) drawFrames(w *svgWriter, dir string, y int, important map[int]bool) {
	var idx []int
	for i := range s.Frames {
		if f := &s.Frames[i]; f.Dir == dir && f.T >= w.from && f.T0 <= w.to {
			idx = append(idx, i)
		}
	}
	if len(idx) > maxMarks {
		const cols = 600
		type bin struct {
			n, bytes int64
			kinds    map[string]int
		}
		bins := make([]bin, cols)
		for _, i := range idx {
			if important[i] {
				continue
			}
			f := &s.Frames[i]
			c := int((w.x(f.T0) - svgLeft) / float64(svgWidth-svgLeft-svgRight) * cols)
			c = min(max(c, 0), cols-1)
			if bins[c].kinds == nil {
				bins[c].kinds = map[string]int{}
			}
			bins[c].n++
			bins[c].bytes += f.N
			bins[c].kinds[f.Kind]++
		}
		var most int64 = 1
		for _, b := range bins {
			most = max(most, b.n)
		}
		cw := float64(svgWidth-svgLeft-svgRight) / cols
		for c, b := range bins {
			if b.n == 0 {
				continue
			}
			h := 3 + float64(laneHeight-10)*float64(b.n)/float64(most)
			w.printf(`<rect class="bin" x="%.1f" y="%.1f" width="%.1f" height="%.1f"><title>%d frames, %s: %s</title></rect>`,
				svgLeft+float64(c)*cw, float64(y+laneHeight-4)-h, cw, h, b.n, size(b.bytes), esc(kindCounts(b.kinds)))
		}
		w.v.Folded = append(w.v.Folded, fmt.Sprintf("%s: %d frames in the window, drawn as columns of counts (hover for each column's frames by kind); the frames of unfinished, cancelled, late or failed requests still one by one", dirName(dir), len(idx)))
	}
	for _, i := range idx {
		if len(idx) > maxMarks && !important[i] {
			continue
		}
		f := s.Frames[i]
		d := w.v.detail(f)
		x0, x1 := w.x(f.T0), w.x(f.T)
		title := frameTitle(&f)
		w.printf(`<rect class="frame %s" data-f="%d" x="%.1f" y="%d" width="%.1f" height="%d"><title>%s</title></rect>`,
			esc(f.Kind), d, x0, y+2, max(x1-x0, 2), 11, esc(title))
	}
}

func kindCounts(k map[string]int) string {
	var names []string
	for n := range k {
		names = append(names, n)
	}
	sort.Strings(names)
	var p []string
	for _, n := range names {
		p = append(p, fmt.Sprintf("%d %s", k[n], n))
	}
	return strings.Join(p, ", ")
}

// name says what a frame is: "request id 7 tools/call search".
func (f *Frame) name() string {
	t := f.Kind
	if len(f.ID) > 0 {
		t += " id " + string(f.ID)
	}
	if f.Method != "" {
		t += " " + f.Method
	}
	if f.Tool != "" {
		t += " " + f.Tool
	}
	return t
}

func frameTitle(f *Frame) string {
	t := f.name() + fmt.Sprintf(", %s, read %s", size(f.N), at(f.T0))
	if f.T > f.T0 {
		t += "–" + at(f.T)
	}
	if f.Head != "" {
		t += "\n" + clip(f.Head, 200)
	}
	return t
}

func (s *Session) drawSpan(w *svgWriter, i int, y int, end int64) {
	r := s.Requests[i]
	e := spanEnd(r, end)
	x0, x1 := w.x(r.Sent), w.x(e)
	title := fmt.Sprintf("%s %s: %s, sent %s", dirName(r.Dir), describe(r.ID, r.Method, r.Tool), r.State, at(r.Sent))
	if r.Delivered > 0 {
		title += fmt.Sprintf(", delivered %s (%s)", at(r.Delivered), dur(r.Delivered-r.Sent))
	} else {
		title += fmt.Sprintf(", no response delivered after %s", dur(end-r.Sent))
	}
	if r.Cancel > 0 {
		title += ", cancelled at " + at(r.Cancel)
	}
	resp := int64(-1)
	if r.Response >= 0 {
		resp = s.Frames[r.Response].Seq
	}
	w.printf(`<g class="req %s" data-req="%s" data-sent="%d" data-delivered="%d" data-seq="%d" data-resp-seq="%d"><title>%s</title><rect x="%.1f" y="%d" width="%.1f" height="%d"/>`,
		esc(r.State), esc(key(r.Dir, r.ID)), r.Sent, r.Delivered, s.Frames[r.Frame].Seq, resp, esc(title), x0, y, max(x1-x0, 2), rowHeight-3)
	if x1-x0 > 50 {
		label := describe(r.ID, r.Method, r.Tool)
		w.printf(`<text class="reqlabel" x="%.1f" y="%d">%s</text>`, x0+2, y+rowHeight-5, esc(clip(label, int((x1-x0)/6))))
	}
	w.printf(`</g>`)
}

// maxItemMarks is how many marks of one kind (cancels, late answers, the
// other events) a timeline draws one by one: the latest; the earlier ones
// are drawn as columns of counts, as frames beyond maxMarks are.
const maxItemMarks = 200

// drawMarks draws cancels and late answers on the requests' rows' level and
// the other marks as thin lines across the lanes: the latest maxItemMarks
// of each kind one by one, the rest binned. Markers closer together than
// a label's width share one label that counts them.
func (s *Session) drawMarks(w *svgWriter, top, bottom int) {
	byKind := map[string][]int{}
	for i, m := range s.Marks {
		if m.T < w.from || m.T > w.to || m.Ev == "verdict" {
			continue
		}
		k := m.Ev
		if k != "cancel" && k != "late" {
			k = "event"
		}
		byKind[k] = append(byKind[k], i)
	}
	for _, k := range []string{"event", "cancel", "late"} {
		idx := byKind[k]
		if len(idx) > maxItemMarks {
			s.binMarks(w, k, idx[:len(idx)-maxItemMarks], top, bottom)
			idx = idx[len(idx)-maxItemMarks:]
		}
		var label labeler
		for _, i := range idx {
			m := s.Marks[i]
			x := w.x(m.T)
			switch k {
			case "cancel":
				w.printf(`<g class="mark cancel" data-t="%d" data-id="%s"><title>%s</title><path d="M%.1f %d l-6 -9 h12 z"/><line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/></g>`,
					m.T, esc(string(m.ID)), esc(at(m.T)+" "+m.Text), x, top, x, x, top, bottom)
				label.add(w, x, "cancel", string(m.ID), "marklabel cancel", top-1)
			case "late":
				w.printf(`<g class="mark late" data-t="%d" data-id="%s"><title>%s</title><path d="M%.1f %d l6 7 l-6 7 l-6 -7 z"/><line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/></g>`,
					m.T, esc(string(m.ID)), esc(at(m.T)+" "+m.Text), x, bottom, x, x, top, bottom)
				label.add(w, x, "late answer", string(m.ID), "marklabel late", bottom+11)
			default:
				w.printf(`<g class="mark ev %s" data-t="%d"><title>%s</title><line x1="%.1f" x2="%.1f" y1="%d" y2="%d"/></g>`,
					esc(m.Ev), m.T, esc(at(m.T)+" "+m.Ev+": "+m.Text), x, x, top, top+3*laneHeight-4)
			}
		}
		label.flush(w)
	}
}

// binMarks draws marks of kind k as columns of counts along the row their
// markers would be on, and says so.
func (s *Session) binMarks(w *svgWriter, k string, idx []int, top, bottom int) {
	const cols = 300
	var bins [cols]int
	for _, i := range idx {
		c := int((w.x(s.Marks[i].T) - svgLeft) / float64(svgWidth-svgLeft-svgRight) * cols)
		bins[min(max(c, 0), cols-1)]++
	}
	y, what := top+3*laneHeight-8, "events (ends, faults, signals, lost detail)"
	switch k {
	case "cancel":
		y, what = top-8, "cancels"
	case "late":
		y, what = bottom+2, "late answers"
	}
	cw := float64(svgWidth-svgLeft-svgRight) / cols
	for c, n := range bins {
		if n > 0 {
			w.printf(`<rect class="bin markbin %s" x="%.1f" y="%d" width="%.1f" height="6"><title>%d %s</title></rect>`, k, svgLeft+float64(c)*cw, y, cw, n, what)
		}
	}
	w.v.Folded = append(w.v.Folded, fmt.Sprintf("%d %s in the window: the latest %d drawn one by one, %d earlier ones as columns of counts (hover for each column's count)", len(idx)+maxItemMarks, what, maxItemMarks, len(idx)))
}

// labeler writes the labels of a row of markers: a marker closer to the
// last label than that label's width joins it, and the label then counts
// them ("cancel 7 +2"), so that no two labels overlap.
type labeler struct {
	x, end  float64
	text    string
	id      string
	class   string
	y, more int
	open    bool
}

func (l *labeler) add(w *svgWriter, x float64, text, id, class string, y int) {
	id = clip(id, 12)
	width := 6.5 * float64(len(text)+1+len(id)+4) // room for " +NN"
	start := x + 7
	if anchor(x) != "" {
		start = x + 7 - 16 - width
	}
	if l.open && start < l.end {
		l.more++
		return
	}
	l.flush(w)
	*l = labeler{x: x, text: text, id: id, class: class, y: y, open: true, end: start + width}
}

func (l *labeler) flush(w *svgWriter) {
	if !l.open {
		return
	}
	t := l.text + " " + l.id
	if l.more > 0 {
		t += fmt.Sprintf(" +%d", l.more)
	}
	w.printf(`<text class="%s" x="%.1f" y="%d"%s>%s</text>`, l.class, l.x+7, l.y, anchor(l.x), esc(t))
	l.open = false
}

// anchor ends a marker's label at the marker when it would run off the
// right edge.
func anchor(x float64) string {
	if x > svgWidth-100 {
		return ` text-anchor="end" transform="translate(-16 0)"`
	}
	return ""
}
