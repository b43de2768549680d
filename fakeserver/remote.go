package fakeserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
)

// remoteSource is the slow streaming HTTP source of the remote tool: an
// httptest.Server on loopback, started on first use and closed when Serve
// returns.
type remoteSource struct {
	mu     sync.Mutex
	srv    *httptest.Server
	closed bool
	next   int
	calls  map[string]*remoteCall
}

// remoteCall is what the handler tells the tool about one request.
type remoteCall struct {
	done    chan struct{} // closed when the handler returned
	aborted bool          // the handler saw the client go away mid-stream
}

// remoteHandlerBound bounds how long a cancelled tool waits for the handler
// to notice the abort; the handler normally notices at once.
const remoteHandlerBound = 10 * time.Second

func (s *Server) remoteURL() (string, *http.Client, error) {
	r := &s.remote
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", nil, errors.New("remote: server is shutting down")
	}
	if r.srv == nil {
		r.calls = map[string]*remoteCall{}
		r.srv = httptest.NewServer(http.HandlerFunc(s.serveRemote))
	}
	return r.srv.URL, r.srv.Client(), nil
}

func (r *remoteSource) close() {
	r.mu.Lock()
	r.closed = true
	srv := r.srv
	r.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (r *remoteSource) register() (string, *remoteCall) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	key := strconv.Itoa(r.next)
	c := &remoteCall{done: make(chan struct{})}
	r.calls[key] = c
	return key, c
}

func (r *remoteSource) forget(key string) {
	r.mu.Lock()
	delete(r.calls, key)
	r.mu.Unlock()
}

// serveRemote streams chunks of n bytes, interval apart, and records
// whether the client aborted before the end.
func (s *Server) serveRemote(rw http.ResponseWriter, req *http.Request) {
	defer s.catch("the remote source's HTTP handler")
	q := req.URL.Query()
	s.remote.mu.Lock()
	c := s.remote.calls[q.Get("call")]
	s.remote.mu.Unlock()
	if c == nil {
		http.Error(rw, "unknown call", http.StatusNotFound)
		return
	}
	defer close(c.done)
	chunks, _ := strconv.Atoi(q.Get("chunks"))
	size, _ := strconv.Atoi(q.Get("bytes"))
	interval, _ := time.ParseDuration(q.Get("interval"))
	rw.Header().Set("Content-Type", "application/octet-stream")
	rw.WriteHeader(http.StatusOK)
	fl, _ := rw.(http.Flusher)
	chunk := make([]byte, size)
	for i := range chunk {
		chunk[i] = 'r'
	}
	for i := range chunks {
		if i > 0 {
			if err := bound.Pass(req.Context(), interval); err != nil {
				break
			}
		}
		if _, err := rw.Write(chunk); err != nil {
			break
		}
		if fl != nil {
			fl.Flush()
		}
	}
	if req.Context().Err() != nil {
		s.remote.mu.Lock()
		c.aborted = true
		s.remote.mu.Unlock()
		s.update(func(r *Report) { r.RemoteAborts++ })
	}
}

type remoteArgs struct {
	Chunks     int `json:"chunks" help:"chunks to stream (default 10)"`
	ChunkBytes int `json:"chunkBytes" help:"bytes per chunk (default 1024)"`
	IntervalMs int `json:"intervalMs" help:"milliseconds between chunks"`
}

// toolRemote reads chunks from the loopback source, reporting progress after
// each; a cancel aborts the HTTP request, and the tool waits until the
// handler has seen the abort.
func (s *Server) toolRemote(w *work, a remoteArgs) (*frame, error) {
	chunks := cmpOr(a.Chunks, 10)
	size := cmpOr(a.ChunkBytes, 1024)
	base, client, err := s.remoteURL()
	if err != nil {
		return nil, err
	}
	key, call := s.remote.register()
	defer s.remote.forget(key)
	url := fmt.Sprintf("%s/stream?call=%s&chunks=%d&bytes=%d&interval=%s", base, key, chunks, size,
		time.Duration(a.IntervalMs)*time.Millisecond)
	req, err := http.NewRequestWithContext(w.ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	buf := make([]byte, size)
	var got int64
	var rerr error
	for i := range chunks {
		n, err := io.ReadFull(resp.Body, buf)
		got += int64(n)
		if err != nil {
			rerr = err
			break
		}
		s.progress(w, float64(i+1), float64(chunks), fmt.Sprintf("remote: chunk %d of %d", i+1, chunks))
	}
	resp.Body.Close()
	if w.ctx.Err() != nil {
		// The handler is running (we got its headers): wait until it has
		// seen the abort, so the report can say so.
		t := time.NewTimer(remoteHandlerBound)
		defer t.Stop()
		select {
		case <-call.done:
		case <-t.C:
			s.logf("remote: handler did not see the abort within %v", remoteHandlerBound)
		}
		s.remote.mu.Lock()
		aborted := call.aborted
		s.remote.mu.Unlock()
		s.mu.Lock()
		w.remoteAborted = aborted
		s.mu.Unlock()
		return nil, w.ctx.Err()
	}
	if rerr != nil {
		return nil, fmt.Errorf("remote: after %d bytes: %w", got, rerr)
	}
	return textResult(w, fmt.Sprintf("remote: received %d bytes in %d chunks", got, chunks), nil), nil
}
