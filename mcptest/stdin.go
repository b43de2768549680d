package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Messages the host sends are encoded once, by hand, in the field order of
// the wire: {"jsonrpc":"2.0","id":…,"method":…,"params":…}.

func appendHead(b []byte) []byte { return append(b, `{"jsonrpc":"2.0"`...) }

// appendRequest encodes a request; id < 0 means a notification.
func appendRequest(b []byte, id int64, method string, params json.RawMessage) []byte {
	b = appendHead(b)
	if id >= 0 {
		b = strconv.AppendInt(append(b, `,"id":`...), id, 10)
	}
	b = appendString(append(b, `,"method":`...), method)
	if len(params) > 0 {
		b = append(append(b, `,"params":`...), params...)
	}
	return append(b, "}\n"...)
}

// appendReply encodes the host's answer to a server request.
func appendReply(b []byte, id json.RawMessage, result any, err error) []byte {
	b = append(append(appendHead(b), `,"id":`...), id...)
	if err == nil {
		raw, merr := json.Marshal(result)
		if merr != nil {
			err = fmt.Errorf("mcptest: encoding result: %w", merr)
		} else {
			if bytes.Equal(raw, []byte("null")) {
				raw = []byte("{}")
			}
			return append(append(append(b, `,"result":`...), raw...), "}\n"...)
		}
	}
	var re *wire.RPCError
	if !errors.As(err, &re) {
		re = &wire.RPCError{Code: wire.CodeInternalError, Message: err.Error()}
	}
	raw, _ := json.Marshal(re)
	return append(append(append(b, `,"error":`...), raw...), "}\n"...)
}

// appendString appends s as a JSON string; the plain ASCII of method names
// needs no escaping.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s)
			return append(b, raw...)
		}
	}
	return append(append(append(b, '"'), s...), '"')
}

// writeRaw writes b to the server's stdin, bounded by ctx and the session
// timeout. A write that times out part-way leaves the server holding the
// start of a message; its rest is kept and written first by the next
// write, so that the stream stays framed and no later message is glued to
// a broken one.
func (s *Session) writeRaw(ctx context.Context, what string, b []byte) error {
	if ctx == nil {
		ctx = context.Background()
	}
	dl := s.waitDeadline(ctx)
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	var err error
	if s.closed { // the message only when it is needed: a call writes once
		err = s.closedErrLocked("writing " + what)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if !time.Now().Before(dl) {
		return context.DeadlineExceeded
	}
	_ = s.stdin.W.SetWriteDeadline(dl)
	// A cancelled ctx ends a blocked write as its deadline would.
	fired := make(chan struct{})
	unwatch := context.AfterFunc(ctx, func() { _ = s.stdin.W.SetWriteDeadline(time.Now()); close(fired) })
	defer func() {
		if !unwatch() {
			<-fired // a late deadline must not cut the next write short
		}
	}()
	if len(s.stdinRest) > 0 {
		n, err := s.stdin.W.Write(s.stdinRest)
		s.mu.Lock()
		s.stats.StdinBytes += int64(n)
		s.mu.Unlock()
		s.stdinRest = s.stdinRest[n:]
		s.stdinRestLen.Store(int64(len(s.stdinRest)))
		if err != nil {
			return s.stdinError(fmt.Sprintf("the %d bytes left of an earlier message, before %s", len(s.stdinRest)+n, what), n, len(s.stdinRest)+n, err)
		}
	}
	n, err := s.stdin.W.Write(b)
	frame := bytes.TrimSuffix(b, []byte("\n"))
	s.mu.Lock()
	s.stats.StdinBytes += int64(n)
	s.recordLocked(time.Now(), "→", int64(len(frame)), frame)
	s.mu.Unlock()
	if err == nil {
		return nil
	}
	// Only a timed-out write to a live server keeps its rest: a server
	// that closed its stdin or ended reads nothing more, and the error
	// then says what it got, not what it would get.
	if n > 0 && n < len(b) && errors.Is(err, os.ErrDeadlineExceeded) && s.alive() {
		s.stdinRest = bytes.Clone(b[n:])
		s.stdinRestLen.Store(int64(len(s.stdinRest)))
		return fmt.Errorf("%w (%w: the remaining %d bytes will be written before the next message, so the server still gets it whole)",
			s.stdinError(fmt.Sprintf("%s (%d bytes)", what, len(b)), n, len(b), err), errPartialWrite, len(b)-n)
	}
	return s.stdinError(fmt.Sprintf("%s (%d bytes)", what, len(b)), n, len(b), err)
}

// errPartialWrite marks a write that timed out part-way: the message will
// still reach the server whole, when the next write sends its rest.
var errPartialWrite = errors.New("the message was partly written")

// stdinError explains a failed write of what to stdin, of whose total bytes
// n got through.
func (s *Session) stdinError(what string, n, total int, err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return s.waitError(fmt.Sprintf("writing %s to server stdin, %d of %d bytes written", what, n, total),
			fmt.Errorf("%s: %w", s.stdinMotion(), context.DeadlineExceeded))
	case errors.Is(err, syscall.EPIPE):
		return s.waitError(fmt.Sprintf("writing %s to server stdin, %d of %d bytes written", what, n, total),
			fmt.Errorf("the server closed its stdin (exited?): %w", err))
	case errors.Is(err, os.ErrClosed):
		s.mu.Lock()
		cerr := s.closedErrLocked("writing " + what)
		s.mu.Unlock()
		if cerr != nil {
			return cerr
		}
		return fmt.Errorf("mcptest: writing %s: stdin was closed (CloseStdin): %w", what, err)
	}
	return fmt.Errorf("mcptest: writing %s to server stdin: %w", what, err)
}

// WriteStdin writes b to the server's stdin as it is, bypassing framing and
// encoding: for feeding a server invalid JSON, an oversized line or any
// other bytes a well-behaved host would never send, or a request cut in
// pieces (see Expect). The write is bounded by ctx and the session timeout;
// when the bound runs out, the error says whether the server is still
// reading its stdin, slowly, or stopped. As for every write, bytes a
// timed-out write could not deliver are written first by the next one.
func (s *Session) WriteStdin(ctx context.Context, b []byte) error {
	return s.writeRaw(ctx, "raw bytes", b)
}

// CloseStdin closes the server's stdin, the graceful shutdown signal of the
// stdio transport. Later writes fail; the stdout reader goes on, so
// whatever the server writes while it shuts down is still read. The rest of
// a message a timed-out write left unsent is dropped: the server gets a
// truncated line (the transcript says so). Use WaitExit to see whether the
// server ends.
func (s *Session) CloseStdin() error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	s.mu.Lock()
	err := s.closedErrLocked("closing stdin")
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if n := len(s.stdinRest); n > 0 {
		s.logf("host closed server stdin with %d bytes of a partly written message unsent: the server got a truncated line", n)
		s.stdinRest = nil
		s.stdinRestLen.Store(0)
	} else {
		s.logf("host closed server stdin")
	}
	if err := s.stdin.W.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		return fmt.Errorf("mcptest: closing server stdin: %w", err)
	}
	return nil
}
