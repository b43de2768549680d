package fakeserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/atomicfile"
)

// WorkState is where a request's work was when something happened to it.
type WorkState string

const (
	// StateUnknown: no request with that id was ever seen.
	StateUnknown WorkState = "unknown"
	// StateNotStarted: the request was read but its work has not begun
	// (it waits for a slot, see WithConcurrency).
	StateNotStarted WorkState = "not started"
	// StateRunning: the tool is producing its result (computing, waiting on
	// a subprocess or on the remote source, waiting for the write lock).
	StateRunning WorkState = "running"
	// StateWriting: the first byte of the response has been handed to
	// stdout; those bytes cannot be recalled.
	StateWriting WorkState = "writing"
	// StateDone: the work has ended and its response, if any, is written.
	StateDone WorkState = "done"
)

// Report is what a Server saw and did. Times are wall-clock; durations are
// measured with the monotonic clock.
type Report struct {
	Requests []RequestRecord // every request read from stdin, in arrival order
	Cancels  []CancelRecord  // every notifications/cancelled, in arrival order

	StdinBytes       int64 // bytes read from stdin
	StdinMessages    int64 // frames read from stdin, valid or not
	StdinParseErrors int64 // frames that were not JSON-RPC (answered with -32700)
	StdinOversized   int64 // lines over the WithStdinLimit limit, discarded unparsed
	ResponsesRead    int64 // responses read from stdin (to server-to-client requests)

	StdoutBytes        int64         // bytes written to stdout, newlines included
	StdoutWrites       int64         // Write calls on stdout
	StdoutWriteErrors  int64         // Write calls on stdout that failed
	StdoutBlocked      time.Duration // total time spent inside stdout Write calls
	StdoutLongestBlock time.Duration // longest single stdout Write call

	StderrBytes int64 // bytes written to stderr (noise and diagnostics)

	IdleNotifyBytes int64 // bytes of Faults.IdleNotifyBytes frames written so far
	IdleNotifyDone  bool  // all Faults.IdleNotifyBytes frames are written

	ChildrenKilled int // subprocess-tool children killed because their work was cancelled
	RemoteAborts   int // remote-source HTTP handlers that saw the client abort mid-stream

	// Panics lists each panic recovered on the server's goroutines, with
	// its stack; the request got -32603 and the server went on.
	Panics []string

	StdinStopped time.Time // when Faults.StopReadingAfterHandshake or FillStdinAfterCall stopped reading stdin
	CallCrashed  time.Time // when Faults.Call "crash" exited mid-response
	FillerTools  int       // filler tools in the last tools/list (Faults.ToolsListBytes)

	// StdinFill is how many bytes Faults.FillStdinAfterCall left in the
	// stdin pipe (FIONREAD), StdinCapacity the pipe's capacity; both 0
	// until it has filled it, or where it cannot, and StdinFillError then
	// says why (stdin is a socket, as Node gives its children, say).
	StdinFill, StdinCapacity int
	StdinFillError           string

	EOF   bool      // stdin reached EOF
	EOFAt time.Time // when it did
	// PID is the server's process id (ServeStdio; 0 under Serve alone).
	PID int
	// Signals lists the signals ServeStdio caught, in order: SIGTERM,
	// SIGINT, SIGHUP and SIGQUIT (SIGKILL cannot be caught).
	Signals []struct {
		Name    string    // e.g. "SIGTERM"
		At      time.Time // when it arrived
		Ignored bool      // the server went on (Faults.IgnoreSIGTERM)
	}
	// DroppedAtEOF counts messages dropped unanswered at stdin EOF
	// (Faults.DropPendingAtEOF).
	DroppedAtEOF int
	Exit         string // why Serve returned; empty while it runs

	// StdinUnread is how many bytes the host had written to stdin that the
	// server had not read when it last looked: at each signal it caught
	// and as it ended (ServeStdio, Linux; zero elsewhere). A server ended
	// by a signal never reads them.
	StdinUnread int64
	// UnreadCancels are the notifications/cancelled found among those
	// unread bytes, in the order found, each once; Arrived is when it was
	// found, State is StateUnknown. One that the server read after all is
	// in Cancels too.
	UnreadCancels []CancelRecord
}

// RequestRecord is one request read from stdin.
type RequestRecord struct {
	ID      string    // the id as it appeared on the wire (JSON text, e.g. 7 or "a")
	Method  string    // e.g. tools/call
	Tool    string    // the tool's name, for tools/call
	Arrived time.Time // when it was read from stdin
	Ended   time.Time // when its work ended; zero while it runs
	State   WorkState // its state now

	ResponseBytes int64 // bytes of its response written to stdout, newline included
	Cut           bool  // its response was cut short (validly closed) by a cancel during writing
	Suppressed    bool  // no response was written because it was cancelled before writing began
}

// CancelRecord is one notifications/cancelled read from stdin.
type CancelRecord struct {
	ID      string    // requestId as JSON text
	Reason  string    // the reason given, if any
	Arrived time.Time // when it was read from stdin
	State   WorkState // the state of the request's work when it arrived

	// Stopped reports whether the producer has stopped, and StoppedAfter how
	// long after the cancel arrived it did (0 when nothing was running).
	// The producer is the tool's work including its subprocess or HTTP
	// request, and the writing of its response.
	Stopped      bool
	StoppedAfter time.Duration

	Suppressed    bool // the response was not written
	ChildKilled   bool // the request's subprocess was killed
	RemoteAborted bool // the remote source's handler saw the request aborted
}

// Report returns a snapshot of what the server has seen so far. It is safe
// to call at any time from any goroutine, also while Serve runs.
func (s *Server) Report() Report {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rep
	r.Requests = slices.Clone(r.Requests)
	r.Cancels = slices.Clone(r.Cancels)
	r.Panics = slices.Clone(r.Panics)
	r.Signals = slices.Clone(r.Signals)
	r.UnreadCancels = slices.Clone(r.UnreadCancels)
	return r
}

// update changes the report in fn, with s.mu held (fn may change other
// state s.mu guards, and must not block), then marks the report dirty for
// the report-file writer. Every change to s.rep goes through it.
func (s *Server) update(fn func(r *Report)) {
	defer func() {
		select {
		case s.dirty <- struct{}{}:
		default:
		}
	}()
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.rep)
}

// reportFileLoop rewrites the report file after each change until stop is
// closed, then writes it a last time.
func (s *Server) reportFileLoop(stop <-chan struct{}) {
	for {
		select {
		case <-s.dirty:
			s.writeReportFile(false)
		case <-stop:
			s.writeReportFile(true)
			return
		}
	}
}

// writeReportFile writes the report file: a regular file (or a new one)
// is replaced whole each time; anything else (a device, a FIFO,
// /dev/stderr) is never replaced, and gets the report written into it
// once, the last time (final).
func (s *Server) writeReportFile(final bool) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	r := s.Report()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		s.logf("report: %v", err)
		return
	}
	path := reportPath(s.cfg.reportFile)
	err = atomicfile.Write(path, append(b, '\n'))
	if errors.Is(err, atomicfile.ErrNotRegular) {
		err = nil
		if final {
			err = atomicfile.WriteInPlace(path, append(b, '\n'))
		}
	}
	if err != nil {
		// Said once: the file is rewritten on every change, and a target
		// that cannot be written fails each time.
		s.reportFails++
		if s.reportFails == 1 {
			s.sayReport(fmt.Sprintf("report: %v (it is rewritten on each change; the failures that follow are not said)", err))
		}
		s.markUnwritten(path, err)
		return
	}
	if s.reportFails > 0 {
		s.sayReport(fmt.Sprintf("report: written again, after %d failed writes", s.reportFails))
		s.reportFails = 0
	}
	if s.unmarked != "" && os.Remove(s.unmarked) == nil {
		s.unmarked = "" // the report is whole again
	}
}

// sayReport logs what the report file's writer has to say, with s.fmu
// held. Its last write comes after the session's end has turned the log
// off (the stderr writer stopped, its last bytes counted in the report);
// what it says then is kept for sayReportLast, so that a report file that
// first fails there is said too.
func (s *Server) sayReport(line string) {
	s.mu.Lock()
	off := s.logOff
	s.mu.Unlock()
	if off {
		s.reportSay = line
		return
	}
	s.logf("%s", line)
}

// sayReportLast writes to stderr what the report file's writer said after
// the log was turned off, once the writer and the log have stopped.
func (s *Server) sayReportLast() {
	s.fmu.Lock()
	line := s.reportSay
	s.reportSay = ""
	s.fmu.Unlock()
	if line != "" {
		s.writeStderr([]byte("fakeserver: " + line + "\n"))
	}
}

// unwrittenMark is what the name of the trace of an unwritten report adds
// to the report's: the error follows, its words joined by '-'.
const unwrittenMark = ".unwritten-"

// markUnwritten leaves, once, beside the report file a reader will look
// for, an empty file whose name says that the report could not be written
// and why: it takes no space for data, so it can be made where the report
// could not (a full disk, a quota), though not where nothing can be made
// (a read-only file system, a directory the server may not write).
func (s *Server) markUnwritten(path string, err error) {
	if s.unmarked != "" {
		return
	}
	why := err.Error()
	var en syscall.Errno
	var pe *fs.PathError
	if errors.As(err, &en) {
		why = en.Error()
	} else if errors.As(err, &pe) {
		why = pe.Err.Error()
	}
	name := path + unwrittenMark + strings.Join(strings.FieldsFunc(why, func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}), "-")
	name = name[:min(len(name), len(path)+len(unwrittenMark)+80)]
	f, cerr := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if cerr == nil {
		f.Close()
		s.unmarked = name
	}
}

// ReportWriteError is ReadReportFile's error when the server could not
// write its report file: the Report it returns is what the file last
// held, stale or empty, and not what the server saw.
type ReportWriteError struct {
	Path string // the report file
	Err  string // why the server could not write it, in the system's words
}

// Error says which report could not be written, and why.
func (e *ReportWriteError) Error() string {
	return fmt.Sprintf("the fake server could not write its report %s: %s", e.Path, e.Err)
}

// ReadReportFile reads a report written by WithReportFile. When the
// server could not write the file, it leaves a trace beside it if it can
// (not where no file can be made, such as a read-only file system), and
// the error is then a *ReportWriteError, whether or not an earlier report
// is there to read.
func ReadReportFile(path string) (Report, error) {
	var r Report
	if why, ok := unwritten(path); ok {
		b, _ := os.ReadFile(path)
		json.Unmarshal(b, &r)
		return r, &ReportWriteError{Path: path, Err: why}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	err = json.Unmarshal(b, &r)
	return r, err
}

// unwritten finds the trace markUnwritten left beside the report file
// path, and returns the error it names.
func unwritten(path string) (string, bool) {
	des, _ := os.ReadDir(filepath.Dir(path))
	prefix := filepath.Base(path) + unwrittenMark
	for _, de := range des {
		if why, ok := strings.CutPrefix(de.Name(), prefix); ok {
			return strings.ReplaceAll(why, "-", " "), true
		}
	}
	return "", false
}

// signalRecord is an element of Report.Signals.
type signalRecord = struct {
	Name    string
	At      time.Time
	Ignored bool
}
