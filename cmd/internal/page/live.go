package page

import (
	"cmp"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/record"
)

//go:embed assets/live.js
var liveJS string

// Proxy is one running proxy as the live page shows it: its status file's
// path and content (Status, shown as it is), and where its record is.
type Proxy struct {
	Path  string    `json:"path"`
	Stale bool      `json:"stale,omitempty"`
	Start time.Time `json:"-"` // the record's time 0
	Log   string    `json:"-"` // the record, "" if none or not to be read
	// NoLog says why there is no record to read when Log is "": the proxy
	// records nothing, or its record is not to be read (and where it is).
	NoLog  string `json:"-"`
	Status any    `json:"status"`
}

// Server serves the live page of the running proxies and the same data as
// JSON, to requests that carry its token. It only reads: the status files
// through List, the records by their paths. Requests go to "/?token=T"
// (the page) and "/status.json?token=T" (what the page polls twice a
// second); any other request, one without the token, or one naming a host
// other than a loopback one (DNS rebinding) is refused.
type Server struct {
	// Token is the secret every request must carry.
	Token string
	// List returns the proxies to show now.
	List func(now time.Time) ([]Proxy, error)
	// Window is how much of each record's timeline is drawn (default 2
	// minutes).
	Window time.Duration

	mu    sync.Mutex
	tails map[string]*tail
}

// LiveProxy is what status.json says about one proxy.
type LiveProxy struct {
	Proxy
	NowUS    int64     `json:"now_us"` // µs since the proxy started, as in its record
	Timeline string    `json:"timeline,omitempty"`
	Folded   []string  `json:"folded,omitempty"`
	Frames   []Frame   `json:"frames,omitempty"`   // what a click on the timeline shows
	Requests []Request `json:"requests,omitempty"` // the latest unfinished ones and the latest ten, from the record
	// RequestsMore counts the unfinished requests not in Requests.
	RequestsMore int    `json:"requests_more,omitempty"`
	Blocks       []Span `json:"blocks,omitempty"` // the latest blocked writes and stalls
	Record       string `json:"record"`           // the record's state in words
	HasRecord    bool   `json:"has_record"`       // a record is read: Requests and Blocks are its
	// Ending says where the record of a proxy whose status file is stale
	// ends, and that the proxy was killed, when the record has no summary;
	// Verdicts and Metrics are then the record's, worked out from its
	// events to that end (the status file's are as of its last update).
	Ending   string           `json:"ending,omitempty"`
	Verdicts []record.Verdict `json:"verdicts,omitempty"`
	Metrics  *record.Metrics  `json:"metrics,omitempty"`
	// More counts what was left out of the status's lists (the pending
	// requests, the verdicts) to keep each poll small: at most
	// maxStatusItems of each are kept, the oldest half and the latest half.
	More map[string]int `json:"more,omitempty"`
}

// maxLiveRequests is how many unfinished requests of a record status.json
// lists (the latest); maxStatusItems how many items of each list of a
// status file.
const (
	maxLiveRequests = 50
	maxStatusItems  = MaxStatusItems
)

// MaxStatusItems is how many items of each list of a proxy's status
// (pending requests, verdicts) the live page and the status command show:
// the oldest half and the latest half, the others counted.
const MaxStatusItems = 100

// Live is the whole of status.json.
type Live struct {
	Now     time.Time   `json:"now"`
	Proxies []LiveProxy `json:"proxies"`
	Error   string      `json:"error,omitempty"`
}

// ServeHTTP serves the page and its data. It never reads a request's
// body: a request that announces one, and any request it refuses, is
// answered and its connection closed without waiting for the body (a
// client that announced a body and never sent it held its connection,
// and with enough of them every connection the server keeps).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Referrer-Policy", "no-referrer")
	if r.ContentLength != 0 {
		closeUnread(w)
	}
	if !loopbackHost(r.Host) {
		closeUnread(w)
		http.Error(w, "mcpstdio status: refused: the page is served to loopback host names only", http.StatusForbidden)
		return
	}
	tok := r.URL.Query().Get("token")
	if s.Token == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(s.Token)) != 1 {
		closeUnread(w)
		http.Error(w, "mcpstdio status: refused: this request has no valid token; open the URL the command printed", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		closeUnread(w)
		http.Error(w, "mcpstdio status: read-only", http.StatusMethodNotAllowed)
		return
	}
	switch r.URL.Path {
	case "/":
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", liveCSP)
		fmt.Fprintf(w, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>mcpstdio status</title><style>%s</style></head><body>\n"+
			"<header><h1>mcpstdio status: running proxies</h1><div class=\"meta\" id=\"meta\">loading…</div></header>\n<main><div id=\"proxies\"></div>"+
			"<h2>selected</h2><div id=\"detail\">click a frame or a request on a timeline to see its frame: head, size, id, method, tool</div></main>\n<script>%s</script></body></html>\n", pageCSS, liveJS)
	case "/status.json":
		live := s.Snapshot(time.Now())
		w.Header().Set("Content-Type", "application/json")
		b, err := json.Marshal(live)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Write(b)
	default:
		http.NotFound(w, r)
	}
}

// closeUnread makes the response close its connection, and a read of
// the request's body (net/http reads what is left of it after the
// handler, to reuse the connection) fail at once.
func closeUnread(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
	http.NewResponseController(w).SetReadDeadline(time.Now())
}

// Snapshot returns what the page shows at now: each proxy's status, and
// from its record the timeline of the last Window, the latest requests
// and blocked writes.
func (s *Server) Snapshot(now time.Time) Live {
	live := Live{Now: now, Proxies: []LiveProxy{}}
	ps, err := s.List(now)
	if err != nil {
		live.Error = err.Error()
	}
	window := s.Window
	if window <= 0 {
		window = 2 * time.Minute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tails == nil {
		s.tails = map[string]*tail{}
	}
	seen := map[string]bool{}
	for _, p := range ps {
		lp := LiveProxy{Proxy: p, NowUS: min(max(now.Sub(p.Start).Microseconds(), 0), MaxTime), Record: "no record: " + cmp.Or(p.NoLog, "the proxy records nothing (-no-log)") + "; no timeline"}
		lp.Status, lp.More = capLists(p.Status, maxStatusItems)
		if p.Log != "" {
			seen[p.Log] = true
			t := s.tails[p.Log]
			if t == nil {
				t = newTail(p.Log)
				s.tails[p.Log] = t
			}
			if p.Stale {
				lp.fillStale(t, window.Microseconds())
			} else {
				t.card = nil
				t.update(window.Microseconds())
				lp.fill(t, window.Microseconds())
			}
		}
		live.Proxies = append(live.Proxies, lp)
	}
	for k := range s.tails {
		if !seen[k] {
			delete(s.tails, k)
		}
	}
	return live
}

// fillStale fills lp for a proxy whose status file is stale: its record
// no longer grows, so what the page shows of it is made once, kept, and
// the record's Session let go (ten stale sessions with large records held
// their whole Sessions, and redrew them each poll). If the record grows
// again (the proxy was only stopped), it is read again from its start.
func (lp *LiveProxy) fillStale(t *tail, window int64) {
	fi, err := os.Stat(t.path)
	if c := t.card; c != nil && err == nil && os.SameFile(fi, t.cardInfo) && fi.Size() == t.cardInfo.Size() && proxyStateOf(t.path, t.cardPID) == t.cardState {
		p := lp.Proxy
		status, more := lp.Status, lp.More
		*lp = *c
		lp.Proxy, lp.Status, lp.More = p, status, more
		return
	}
	t.update(window)
	lp.fill(t, window)
	if err == nil && t.err == nil && t.off == fi.Size() { // read to its end (an update reads at most maxTailRead)
		card := *lp
		pid := 0
		if t.sess.Header != nil {
			pid = t.sess.Header.PID
		}
		*t = tail{path: t.path, sess: New(), card: &card, cardInfo: fi, cardPID: pid, cardState: t.sess.ProxyState}
	}
}

func (lp *LiveProxy) fill(t *tail, window int64) {
	sess := t.sess
	now := max(lp.NowUS, sess.End)
	lp.HasRecord = true
	if lp.Stale {
		// A stale status file: the proxy was killed, or it is stopped
		// (SIGSTOP) and still holds its record.
		now, lp.NowUS = sess.End, sess.End
		state := ProxyGone
		if sess.Header != nil {
			state = proxyStateOf(t.path, sess.Header.PID)
		}
		sess.SetProxyState(state)
		if !sess.Summary {
			lp.Ending, lp.Metrics = sess.Unended, sess.Metrics
			lp.Verdicts = sess.Verdicts
		}
	} else {
		sess.SetProxyState(ProxyRunning)
	}
	lp.Record = fmt.Sprintf("record %s (%s read)", t.path, size(t.off))
	if t.err != nil {
		lp.Record += "; reading it: " + t.err.Error()
	}
	from := max(now-window, 0)
	v := sess.timeline(from, max(now, from+1), now)
	lp.Timeline, lp.Folded, lp.Frames = v.SVG, v.Folded, v.Detail
	if lp.Frames == nil {
		lp.Frames = []Frame{}
	}
	// The latest unfinished requests and the latest ten, newest first.
	var reqs []Request
	unfinished := 0
	for i := len(sess.Requests) - 1; i >= 0; i-- {
		r := sess.Requests[i]
		switch {
		case r.State != "delivered":
			if unfinished++; unfinished > maxLiveRequests {
				lp.RequestsMore++
				continue
			}
		case i < len(sess.Requests)-10:
			continue
		}
		reqs = append(reqs, r)
	}
	sort.SliceStable(reqs, func(i, j int) bool { return reqs[i].Sent > reqs[j].Sent })
	lp.Requests = reqs
	if n := len(sess.Blocks); n > 5 {
		lp.Blocks = append([]Span(nil), sess.Blocks[n-5:]...)
	} else {
		lp.Blocks = append([]Span(nil), sess.Blocks...)
	}
}

// capLists returns status with each list it holds (a JSON array as a
// field of the object) cut to its first max/2 and last max/2 items, and
// how many items were left out of each, by field name. A status that is
// not a JSON object is returned as it is.
func capLists(status any, max int) (any, map[string]int) {
	b, err := json.Marshal(status)
	if err != nil {
		return status, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return status, nil
	}
	var more map[string]int
	for k, v := range m {
		var items []json.RawMessage
		if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil || len(items) <= max {
			continue
		}
		if more == nil {
			more = map[string]int{}
		}
		more[k] = len(items) - max
		kept := append(items[:max/2:max/2], items[len(items)-max/2:]...)
		m[k], _ = json.Marshal(kept)
	}
	if more == nil {
		return status, nil
	}
	return m, more
}

// loopbackHost reports whether a Host header names a loopback address or
// localhost.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckLoopback returns the address to listen on for addr ("host:port"),
// or an error if host is not a loopback address: an IP literal that is
// loopback, or "localhost" (listened on as 127.0.0.1). An empty host means
// every interface and is refused.
func CheckLoopback(addr string) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("%q is not host:port: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return net.JoinHostPort("127.0.0.1", port), nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		if host == "" {
			host = "every interface"
		}
		return "", fmt.Errorf("%s is not a loopback address: the page shows what agents send their tools, so it is served on 127.0.0.1, ::1 or localhost only", host)
	}
	return addr, nil
}
