package fakeserver

import (
	"bytes"
	"cmp"
	"flag"
	"fmt"
	"reflect"
)

// Faults are the ways a Server misbehaves, one field each; the zero Faults
// is a correct server. A Faults value is an Option: New(Faults{NaiveLoop:
// true}); a later Faults replaces an earlier one. Each field is also the
// command-line flag named by its flag tag (see ParseArgs).
//
// Faults fire on counts, never on chance or a clock. "The nth message" is
// the nth line read from stdin, counted from 1, valid or not (lines over the
// WithStdinLimit limit are not counted); 0 turns the fault off.
type Faults struct {
	// Banner, if set, is written with a newline on stdout before the first
	// message is read: junk a strict host must survive.
	Banner string `flag:"banner" usage:"line written on stdout before the first message"`
	// StdoutLogAfter writes StdoutLogLine and a newline on stdout right
	// after the nth message is read (before the response to it).
	StdoutLogAfter int `flag:"stdout-log-after" usage:"write -stdout-log-line on stdout after the nth message"`
	// StdoutLogLine is the line of StdoutLogAfter; empty means
	// "fakeserver: a log line on stdout".
	StdoutLogLine string `flag:"stdout-log-line" usage:"line for -stdout-log-after"`
	// StderrNoise writes exactly this many bytes of text lines to stderr
	// before the first message is read, so a host that does not drain
	// stderr stalls the server there.
	StderrNoise int64 `flag:"stderr-noise" usage:"bytes of noise on stderr before the first message"`
	// IdleNotifyBytes writes at least this many bytes of unasked
	// notifications/message frames after the first tools/call's response,
	// while the host is idle; Report.IdleNotifyDone says when all are out.
	IdleNotifyBytes int64 `flag:"idle-notify-bytes" usage:"bytes of notifications written after the first tools/call response"`
	// IgnoreCancel records notifications/cancelled in the report but
	// neither stops the work nor suppresses its response.
	IgnoreCancel bool `flag:"ignore-cancel" usage:"ignore notifications/cancelled"`
	// RespondAfterCancel stops cancelled work but still responds, as the Go
	// SDKs do: the result if finished, else -32603 "context canceled".
	RespondAfterCancel bool `flag:"respond-after-cancel" usage:"respond to cancelled requests"`
	// UnboundedResults makes the search tool return every matching item in
	// one result, without page size, cursor or truncation (the naive tool).
	UnboundedResults bool `flag:"unbounded" usage:"search returns everything at once"`
	// NaiveLoop replaces the core with one goroutine that reads stdin only
	// between writes: it sees no cancel while a stdout write is blocked.
	NaiveLoop bool `flag:"naive" usage:"single-goroutine loop reading stdin only between writes"`
	// InvalidJSONAfter writes a line that is not valid JSON on stdout right
	// after the nth message is read (before the response to it).
	InvalidJSONAfter int `flag:"invalid-json-after" usage:"invalid JSON line after the nth message"`
	// RawNewline puts a raw newline inside the response to the nth message,
	// splitting it in two lines that are each invalid JSON.
	RawNewline int `flag:"raw-newline" usage:"raw newline inside the response to the nth message"`
	// OversizedAfter writes a notifications/message of OversizedSize bytes
	// on stdout right after the nth message is read (before its response).
	OversizedAfter int `flag:"oversized-after" usage:"oversized frame after the nth message (needs -oversized-size)"`
	// OversizedSize is the size in bytes of the OversizedAfter frame.
	OversizedSize int `flag:"oversized-size" usage:"size in bytes of the -oversized-after frame"`
	// NoFinalNewline writes the response to the nth message without its
	// newline, then closes stdout and makes Serve return ErrExited.
	NoFinalNewline int `flag:"no-final-newline" usage:"response to the nth message without newline, then exit"`
	// CloseStdoutAfter closes stdout after the response to the nth message;
	// the server reads stdin on, and later writes fail
	// (Report.StdoutWriteErrors).
	CloseStdoutAfter int `flag:"close-stdout-after" usage:"close stdout after the response to the nth message"`
	// ExitAfterBytes writes exactly this many bytes to stdout in all, then
	// closes stdout and makes Serve return ErrExited.
	ExitAfterBytes int64 `flag:"exit-after-bytes" usage:"exit after exactly n bytes of stdout"`
	// DropPendingAtEOF drops unanswered the messages of the last read
	// before stdin's EOF (Report.DroppedAtEOF), as the official Go SDK
	// v1.8.0 does.
	DropPendingAtEOF bool `flag:"drop-pending-at-eof" usage:"drop the messages of the last read before stdin EOF unanswered"`
	// EndUnlessInitialize ends the server, closing stdout, when its first
	// message is not initialize, as rmcp 1.1 servers do.
	EndUnlessInitialize bool `flag:"end-unless-initialize" usage:"end when the first message is not initialize"`
	// IgnoreEOF keeps the server running after stdin reaches EOF, until
	// Serve's context is cancelled.
	IgnoreEOF bool `flag:"ignore-eof" usage:"keep running after stdin EOF"`
	// IgnoreSIGTERM makes a server started by ServeStdio ignore SIGTERM,
	// SIGINT and SIGHUP (each still recorded in Report.Signals) and
	// SIGPIPE, so that only SIGQUIT or SIGKILL ends it; no effect on Serve.
	IgnoreSIGTERM bool `flag:"ignore-sigterm" usage:"ignore SIGTERM, SIGINT, SIGHUP and SIGPIPE"`
	// ServerRequestAfter writes a ping request (id "fakeserver-1") on
	// stdout after the nth message is read, in either era.
	ServerRequestAfter int `flag:"server-request-after" usage:"server-to-client ping after the nth message"`
	// EndOnCRLF ends the server, closing stdout, at the first line that
	// ends in "\r\n" (a CRLF-only blank line included), without handling
	// it, as the official Go SDK before v1.2.0 did.
	EndOnCRLF bool `flag:"end-on-crlf" usage:"end at the first line that ends in \\r\\n, unhandled"`
	// CrashOnBrokenPipe makes a server started by ServeStdio crash when a
	// write to stdout finds the host's end closed (EPIPE): an unrecovered
	// panic, exit status 2 and its trace on stderr, as a server with no
	// handler for that error does; no effect on Serve.
	CrashOnBrokenPipe bool `flag:"crash-on-broken-pipe" usage:"crash (an unrecovered panic) when a stdout write finds the host gone"`

	// The host faults: what a host's own timeout, cancel and restart
	// logic is judged by.

	// Call makes the first tools/call, whatever tool it names, behave as
	// one of CallHang, CallProgress and CallCrash, or as the fake tool of
	// that name with CallArgs; later calls of a tool the fake does not
	// have are answered as echo.
	Call string `flag:"call" usage:"the first tools/call, whatever its tool: hang, progress, crash, or a tool's name (with -call-args)"`
	// CallArgs are the JSON arguments the -call tool runs with, in place
	// of the host's own.
	CallArgs string `flag:"call-args" usage:"JSON object of arguments for -call TOOL"`
	// StopReadingAfterHandshake stops reading stdin (for good) after the
	// handshake: after notifications/initialized, or server/discover.
	StopReadingAfterHandshake bool `flag:"stop-reading-after-handshake" usage:"stop reading stdin after the handshake"`
	// ToolsListBytes pads tools/list with filler tools until it is at
	// least this many bytes.
	ToolsListBytes int `flag:"tools-list-bytes" usage:"pad tools/list with filler tools to at least n bytes"`
	// FillStdinAfterCall stops reading stdin (for good) once the first
	// tools/call is read and fills the stdin pipe, through /proc/self/fd/0,
	// until a write of 64 bytes would block: any further message from the
	// host waits in write(2), or in its own queue. Report.StdinFill and
	// StdinCapacity say how full it is, and Report.EOFAt when the host
	// closed its end (the pipe's hang-up, though nothing is read). A
	// server started by ServeStdio on Linux only; elsewhere it only stops
	// reading.
	FillStdinAfterCall bool `flag:"fill-stdin-after-call" usage:"after the first tools/call, stop reading stdin and fill its pipe (Linux)"`
	// NoHandshake never answers initialize or server/discover (a cancel
	// ends their work, answered only with RespondAfterCancel).
	NoHandshake bool `flag:"no-handshake" usage:"never answer initialize or server/discover"`
}

// How the faults behave, beyond what their docs say. They fall in four
// groups: junk on stdout (Banner, StdoutLogAfter, InvalidJSONAfter,
// OversizedAfter, ServerRequestAfter), broken frames (RawNewline,
// NoFinalNewline, ExitAfterBytes, CloseStdoutAfter), pressure (StderrNoise,
// IdleNotifyBytes, UnboundedResults), and the wrong core (NaiveLoop,
// IgnoreCancel, RespondAfterCancel, DropPendingAtEOF, EndUnlessInitialize,
// IgnoreEOF, IgnoreSIGTERM, EndOnCRLF, CrashOnBrokenPipe). A fault is
// defined here once: each field is also its flag.
//
//   - IdleNotifyBytes: frames of 16 KiB each, the last shorter but at least
//     104 bytes, written while the host has its answer and is idle.
//   - RespondAfterCancel: -32603 "context canceled" is how mcp-go writes it.
//   - NaiveLoop: it reads a message, handles it and writes its response
//     before reading the next, so it cannot see a cancel or a second request
//     while a stdout write is blocked: the server that back-pressure
//     freezes.
//   - InvalidJSONAfter: the line is the start of an object that never ends.
//   - RawNewline: the newline is right after the leading {"jsonrpc":"2.0",.
//   - OversizedAfter: exactly OversizedSize bytes without the newline, and at
//     least the 103-byte envelope.
//   - CloseStdoutAfter: if the nth message gets no response, stdout is closed
//     right after it is read; the server reads stdin until EOF.
//   - ExitAfterBytes: the write that crosses the last byte is cut, usually in
//     the middle of a response.
//   - DropPendingAtEOF: the SDK answered 0 to 3 of 5 cheap calls written with
//     the handshake in one write before EOF, in 14 runs measured. The
//     messages of a read that brought more than one are held until the next
//     read, handled if it brings data, and dropped unanswered if it is EOF. A
//     host that writes two messages at once and waits for an answer waits
//     until it writes again.
//   - EndUnlessInitialize: a server/discover probe ends such servers (the
//     official Rust SDK).
//   - ServerRequestAfter: in 2026-07-28 a server request is a protocol
//     violation.
//   - EndOnCRLF: go-sdk v1.1.0 read a message with a json.Decoder and
//     took any byte after it but "\n" as trailing garbage that ends the
//     connection; v1.2.0 accepts "\r" there.
//   - CrashOnBrokenPipe: the panic is raised on a goroutine of its own, out
//     of reach of the recovery that keeps the fake's handlers alive, so the
//     process ends as an uncaught error ends a server: @modelcontextprotocol/sdk
//     1.32.2 exits 1 with "Unhandled 'error' event … Error: write EPIPE".

func (f Faults) apply(c *config) { c.faults = f }

// defaultStdoutLogLine is the line of StdoutLogAfter when none is given.
const defaultStdoutLogLine = "fakeserver: a log line on stdout"

// addFlags defines a flag for each field of f, pointing at the field.
func (f *Faults) addFlags(fs *flag.FlagSet) {
	v := reflect.ValueOf(f).Elem()
	for i := range v.NumField() {
		sf := v.Type().Field(i)
		name, usage := sf.Tag.Get("flag"), sf.Tag.Get("usage")+" (Faults."+sf.Name+")"
		switch p := v.Field(i).Addr().Interface().(type) {
		case *string:
			fs.StringVar(p, name, *p, usage)
		case *int:
			fs.IntVar(p, name, *p, usage)
		case *int64:
			fs.Int64Var(p, name, *p, usage)
		case *bool:
			fs.BoolVar(p, name, *p, usage)
		default:
			panic(fmt.Sprintf("fakeserver: Faults.%s: no flag for a %T", sf.Name, p))
		}
	}
}

// check rejects what flags can say but no fault means: a negative count,
// and an oversized frame of no size.
func (f *Faults) check() error {
	v := reflect.ValueOf(f).Elem()
	for i := range v.NumField() {
		if fv := v.Field(i); fv.CanInt() && fv.Int() < 0 {
			return fmt.Errorf("-%s %d: must not be negative", v.Type().Field(i).Tag.Get("flag"), fv.Int())
		}
	}
	if err := f.checkHost(); err != nil {
		return err
	}
	if f.OversizedAfter > 0 && f.OversizedSize <= 0 {
		return fmt.Errorf("-oversized-after %d needs -oversized-size", f.OversizedAfter)
	}
	return nil
}

// faultPlan is what the faults do around the nth message read from stdin.
type faultPlan struct {
	n           int
	prelude     [][]byte // lines written before the message's response
	rawNewline  bool     // a raw newline inside the response
	noNewline   bool     // the response without its newline, then exit
	closeStdout bool     // close stdout after the response
}

func (p faultPlan) empty() bool {
	return len(p.prelude) == 0 && !p.rawNewline && !p.noNewline && !p.closeStdout
}

// invalidJSONLine is the line of InvalidJSONAfter: the start of a JSON
// object that never ends.
const invalidJSONLine = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":`

// serverRequestLine is the server-to-client request of ServerRequestAfter.
const serverRequestLine = `{"jsonrpc":"2.0","id":"fakeserver-1","method":"ping"}`

const (
	oversizedHead = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"fakeserver","data":"`
	oversizedTail = `"}}`
)

// oversizedFrame returns the frame of OversizedAfter, without its newline:
// a notifications/message of exactly size bytes, or of its minimum size
// (len of the envelope, 103 bytes) if size is smaller.
func oversizedFrame(size int) []byte {
	pad := max(size-len(oversizedHead)-len(oversizedTail), 0)
	b := make([]byte, 0, len(oversizedHead)+pad+len(oversizedTail))
	b = append(b, oversizedHead...)
	b = append(b, bytes.Repeat([]byte("o"), pad)...)
	return append(b, oversizedTail...)
}

func (s *Server) planFor(n int) faultPlan {
	f := &s.cfg.faults
	p := faultPlan{n: n}
	if f.StdoutLogAfter == n {
		p.prelude = append(p.prelude, []byte(cmp.Or(f.StdoutLogLine, defaultStdoutLogLine)+"\n"))
	}
	if f.InvalidJSONAfter == n {
		p.prelude = append(p.prelude, []byte(invalidJSONLine+"\n"))
	}
	if f.OversizedAfter == n {
		p.prelude = append(p.prelude, append(oversizedFrame(f.OversizedSize), '\n'))
	}
	if f.ServerRequestAfter == n {
		p.prelude = append(p.prelude, []byte(serverRequestLine+"\n"))
	}
	p.rawNewline = f.RawNewline == n
	p.noNewline = f.NoFinalNewline == n
	p.closeStdout = f.CloseStdoutAfter == n
	return p
}

// writePrelude writes the fault lines planned before a response; s.wmu must
// be held.
func (s *Server) writePrelude(p faultPlan) {
	for _, line := range p.prelude {
		if _, err := s.out.write(line); err != nil {
			s.logf("fault line after message %d: %v", p.n, err)
		}
	}
}

// afterFrame carries out the faults planned after a response (or after a
// message that got none); s.wmu must be held.
func (s *Server) afterFrame(p faultPlan) {
	if p.noNewline {
		s.out.close()
		s.exit(fmt.Errorf("%w: NoFinalNewline %d", ErrExited, p.n))
	}
	if p.closeStdout {
		s.out.close()
		s.logf("stdout closed after message %d (CloseStdoutAfter)", p.n)
	}
}
