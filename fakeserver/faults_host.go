package fakeserver

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/bound"
	"github.com/mcpstdio/mcpstdio/wire"
)

// The modes of Faults.Call besides a tool's name.
const (
	// CallHang never answers the call; a cancel ends its work (answered
	// only with RespondAfterCancel: a late answer).
	CallHang = "hang"
	// CallProgress sends a progress notification every ProgressEvery
	// (notifications/message when the call has no progressToken) and
	// never answers.
	CallProgress = "progress"
	// CallCrash writes half of a CrashFrameSize-byte response and exits.
	CallCrash = "crash"
)

// callModes lists the modes of Faults.Call that are not a tool's name.
func callModes() []string { return []string{CallHang, CallProgress, CallCrash} }

// ProgressEvery is the interval of CallProgress's notifications.
const ProgressEvery = 100 * time.Millisecond

// CrashFrameSize is the size of the response CallCrash writes half of.
const CrashFrameSize = 1 << 20

// ReportPID, in the path given to WithReportFile (-report), is replaced by
// the process id, so that each server a host starts (a restart) writes a
// report of its own.
const ReportPID = "{pid}"

func reportPath(p string) string { return strings.ReplaceAll(p, ReportPID, strconv.Itoa(os.Getpid())) }

func (f *Faults) checkHost() error {
	if f.Call == "" || slices.Contains(callModes(), f.Call) || slices.ContainsFunc(toolTable, func(t tool) bool { return t.Name == f.Call }) {
		if f.CallArgs != "" {
			var m map[string]any
			if err := json.Unmarshal([]byte(f.CallArgs), &m); err != nil || m == nil {
				return fmt.Errorf("-call-args %q: want a JSON object", f.CallArgs)
			}
		}
		return nil
	}
	return fmt.Errorf("-call %q: want one of %s, or a tool (%s)", f.Call, strings.Join(callModes(), ", "), strings.Join(Tools(), ", "))
}

// hostCall runs the first tools/call as Faults.Call says; ok is false for
// any other request, or without Faults.Call.
func (s *Server) hostCall(w *work) (f *frame, ok bool) {
	mode := s.cfg.faults.Call
	if mode == "" {
		return nil, false
	}
	first := false
	s.update(func(r *Report) {
		first = slices.IndexFunc(r.Requests, func(q RequestRecord) bool { return q.Method == wire.MethodToolsCall }) == w.reqIdx
	})
	if !first {
		return nil, false
	}
	switch mode {
	case CallHang:
		<-w.ctx.Done()
		return s.cancelledFrame(w), true
	case CallProgress:
		return s.progressForever(w), true
	case CallCrash:
		s.crash(w)
		return nil, true
	}
	w.params.Name = mode
	if s.cfg.faults.CallArgs != "" {
		w.params.Arguments = json.RawMessage(s.cfg.faults.CallArgs)
	}
	return nil, false
}

func (s *Server) progressForever(w *work) *frame {
	for i := 1; ; i++ {
		if _, ok := w.params.Meta["progressToken"]; ok {
			s.progress(w, float64(i), 0, fmt.Sprintf("still working: step %d", i))
		} else {
			b := marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
				"params": map[string]any{"level": "info", "logger": "fakeserver", "data": fmt.Sprintf("still working: step %d", i)}})
			s.wmu.Lock()
			if w.ctx.Err() == nil {
				s.out.write(append(b, '\n'))
			}
			s.wmu.Unlock()
		}
		if bound.Pass(w.ctx, ProgressEvery) != nil {
			return s.cancelledFrame(w)
		}
	}
}

// crash writes the first half of a big response to w and ends the server.
func (s *Server) crash(w *work) {
	f, err := s.toolBig(w, BigArgs{FrameSize: CrashFrameSize})
	if err != nil {
		panic(err) // a fixed, valid size
	}
	s.setState(w, StateWriting)
	s.wmu.Lock()
	half := f.buf[:len(f.buf)/2]
	for len(half) > 0 {
		n := min(len(half), defaultChunkSize)
		if _, err := s.out.write(half[:n]); err != nil {
			break
		}
		half = half[n:]
	}
	s.wmu.Unlock()
	s.update(func(r *Report) { r.CallCrashed = time.Now() })
	s.exit(fmt.Errorf("%w: Call crash, %d of %d bytes of the response written", ErrExited, len(f.buf)/2, len(f.buf)+1))
}

// endsHandshake reports whether frame ends the handshake: the
// notifications/initialized of the legacy era, or a server/discover.
func endsHandshake(frame []byte) bool {
	m, err := wire.ParseMessage(frame)
	return err == nil && (m.Method == wire.MethodInitialized || m.Method == wire.MethodDiscover)
}

// stopReading stops reading stdin until the session ends otherwise (a
// signal, a fault's exit).
func (s *Server) stopReading() error {
	s.update(func(r *Report) { r.StdinStopped = time.Now() })
	s.logf("stopped reading stdin after the handshake (StopReadingAfterHandshake)")
	<-s.base.Done()
	return s.base.Err()
}

// fillerTools pads tools to Faults.ToolsListBytes with tools named
// filler-0001 on, each about 1 KiB in tools/list.
func (s *Server) fillerTools(tools []any) []any {
	want := s.cfg.faults.ToolsListBytes
	if want <= 0 {
		return tools
	}
	size := len(marshal(tools))
	desc := strings.Repeat("A filler tool that makes tools/list large. ", 22)
	n := 0
	for size < want {
		n++
		t := tool{Name: FillerTool(n), Description: desc, InputSchema: schemaOf(reflect.TypeFor[echoArgs]())}
		size += len(marshal(t)) + 1
		tools = append(tools, t)
	}
	s.update(func(r *Report) { r.FillerTools = n })
	return tools
}

// FillerTool is the name of the nth filler tool of Faults.ToolsListBytes.
func FillerTool(n int) string { return fmt.Sprintf("filler-%04d", n) }
