// Package quiet is the assertions tests' quiet server: a legacy-era server
// whose work the wire does not show, in-process in the tests and, built on
// its own by ../quietserver, as a child process.
package quiet

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpstdio/mcpstdio/wire"
)

// Server is a legacy-era server whose "slow" tool does its work in a
// way the wire does not show: no progress notifications. How, and what it
// does when cancelled, its options say:
//
//	work=sleep     the work sleeps (no CPU)
//	work=burn      the work burns CPU
//	work=spawn     the work runs "sleep 30" as a child process
//	ignore-cancel  the work goes on after a cancel, and answers when done
//	answer-cancel  a cancelled call is answered at once with -32800, as
//	               servers that report their context's end do
//	background=F   burn F of a CPU (0.5, 1.5) for the server's whole life,
//	               call or no call: a language server indexing its
//	               workspace
//	for=D          the work lasts D (default 3s)
//	drop-after-bad on an invalid JSON line, drop the rest of what was read
//	answer-bad     answer an invalid JSON line with -32700 and no id
//	exit-after=N   end after the Nth tools/call (a server that cannot take
//	               a flood, stalled or not)
//	async          write every reply from a goroutine of its own, so that
//	               the read loop never waits on stdout
//	slow-read=N    read stdin at about N KiB/s
//	chatty         "big" writes 64 KiB of log notifications before its response
//	id-last        responses put the id last, as the TypeScript SDK does:
//	               {"result":…,"jsonrpc":"2.0","id":N}
//	slow-write=N   "big" writes its response at about N KiB/s, 1/20 of
//	               that every 50ms, from a goroutine of its own that stops
//	               when the server ends (a server that produces slowly)
//	gulp=D         once a "big" call has been read, take stdin in 64 KiB
//	               gulps D apart, burning a third of a CPU in between (a
//	               busy, slow reader: slow, not stopped)
//	int-ids        drop requests whose id is not an integer, as servers
//	               whose JSON-RPC ids are int64 do
//	spaced         write JSON with a space after every ':' and ',', as
//	               Python's json.dumps does: "id": "x"
//
// Tools: slow (the work), big {bytes} (a text result), echo.
func Server(args []string) func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, errw io.Writer) error {
	opts := map[string]string{}
	for _, a := range args {
		k, v, _ := strings.Cut(a, "=")
		opts[k] = v
	}
	return func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		var mu sync.Mutex
		_, idLast := opts["id-last"]
		write := func(v any) {
			b, _ := json.Marshal(v)
			if _, sp := opts["spaced"]; sp {
				b = spacedJSON(b)
			}
			if m, ok := v.(map[string]any); ok && idLast && m["result"] != nil {
				res, _ := json.Marshal(m["result"])
				id, _ := json.Marshal(m["id"])
				b = fmt.Appendf(nil, `{"result":%s,"jsonrpc":"2.0","id":%s}`, res, id)
			}
			mu.Lock()
			defer mu.Unlock()
			out.Write(append(b, '\n'))
		}
		sctx, stop := context.WithCancel(ctx) // ends the slow writer when the server ends
		var rd io.Reader = in
		if n := opts["slow-read"]; n != "" {
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			rd = &slowReader{r: in, chunk: max(atoiOr(n, 256)<<10/20, 1), tick: tick.C}
		}
		var gulping atomic.Bool
		if d, err := time.ParseDuration(opts["gulp"]); err == nil {
			rd = &gulpReader{r: in, every: d, on: &gulping}
		}
		r := bufio.NewReaderSize(rd, 64<<10)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer stop() // before the wait
		if f, err := strconv.ParseFloat(opts["background"], 64); err == nil && f > 0 {
			for ; f > 0; f-- {
				wg.Add(1)
				go func(share float64) {
					defer wg.Done()
					burnBackground(sctx, min(share, 1))
				}(f)
			}
		}
		cancels := map[string]context.CancelFunc{}
		calls := 0
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				for _, c := range cancels {
					c()
				}
				return nil
			}
			m, err := wire.ParseMessage(line)
			if err != nil {
				if _, answer := opts["answer-bad"]; answer {
					write(map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": wire.CodeParseError, "message": "Parse error"}})
				}
				if _, drop := opts["drop-after-bad"]; drop {
					r.Discard(r.Buffered()) // the naive reader's bug: the rest of the read goes too
				}
				continue
			}
			switch {
			case m.Method == wire.MethodCancelled:
				id := string(wire.Member(m.Params, "requestId"))
				if c := cancels[id]; c != nil {
					if _, ignore := opts["ignore-cancel"]; !ignore {
						c()
						if _, answer := opts["answer-cancel"]; answer {
							write(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": map[string]any{"code": -32800, "message": "Request cancelled"}})
						}
					}
				}
				continue
			case !m.IsRequest():
				continue
			}
			if _, ok := m.IntID(); !ok && hasOpt(opts, "int-ids") {
				continue
			}
			reply := map[string]any{"jsonrpc": "2.0", "id": m.ID}
			switch m.Method {
			case wire.MethodInitialize:
				reply["result"] = map[string]any{"protocolVersion": wire.Version20251125, "capabilities": map[string]any{"tools": map[string]any{}}, "serverInfo": map[string]any{"name": "quiet", "version": "1"}}
			case wire.MethodPing:
				reply["result"] = map[string]any{}
			case wire.MethodToolsCall:
				if calls++; opts["exit-after"] != "" && calls > atoiOr(opts["exit-after"], 0) {
					return errors.New("quiet: exit-after reached")
				}
				name := string(wire.Member(m.Params, "name"))
				switch name {
				case `"slow"`:
					wctx, cancel := context.WithCancel(ctx)
					cancels[string(m.ID)] = cancel
					wg.Add(1)
					go func() {
						defer wg.Done()
						if quietWork(wctx, opts) {
							reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "done"}}}
							write(reply)
						}
					}()
					continue
				case `"big"`:
					gulping.Store(true)
					if _, chatty := opts["chatty"]; chatty {
						for i := range 256 {
							write(map[string]any{"jsonrpc": "2.0", "method": wire.MethodMessage, "params": map[string]any{"level": "info", "data": fmt.Sprintf("%03d %s", i, strings.Repeat("l", 230))}})
						}
					}
					var a struct {
						Bytes int `json:"bytes"`
					}
					json.Unmarshal(wire.Member(m.Params, "arguments"), &a)
					reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": strings.Repeat("x", a.Bytes)}}}
					if n := opts["slow-write"]; n != "" {
						b, _ := json.Marshal(reply)
						wg.Add(1)
						go func() {
							defer wg.Done()
							slowWrite(sctx, out, &mu, append(b, '\n'), max(atoiOr(n, 4)<<10/20, 1))
						}()
						continue
					}
				default:
					reply["result"] = map[string]any{"content": []any{map[string]any{"type": "text", "text": "echo"}}}
				}
			default:
				reply["error"] = map[string]any{"code": wire.CodeMethodNotFound, "message": "method not found"}
			}
			if _, async := opts["async"]; async {
				wg.Add(1)
				go func() {
					defer wg.Done()
					write(reply)
				}()
				continue
			}
			write(reply)
		}
	}
}

// quietWork does the slow tool's work for its duration, or until ctx ends
// (a cancel the server honours); it reports whether to answer.
func quietWork(ctx context.Context, opts map[string]string) bool {
	d, err := time.ParseDuration(opts["for"])
	if err != nil {
		d = 3 * time.Second
	}
	end := time.Now().Add(d)
	switch opts["work"] {
	case "burn":
		for time.Now().Before(end) {
			if ctx.Err() != nil {
				return false
			}
			for i := 0; i < 1e5; i++ { // spin
			}
		}
	case "spawn":
		cmd := exec.CommandContext(ctx, "sleep", "30")
		if cmd.Start() != nil {
			return false
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		cmd.Process.Kill()
		cmd.Wait()
	default: // sleep
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return ctx.Err() == nil
}

// burnBackground burns share of a CPU, in 10ms periods, until ctx ends.
func burnBackground(ctx context.Context, share float64) {
	busy := time.Duration(share * float64(10*time.Millisecond))
	for ctx.Err() == nil {
		end := time.Now().Add(busy)
		for time.Now().Before(end) {
			for i := 0; i < 1e4; i++ { // spin
			}
		}
		if rest := 10*time.Millisecond - busy; rest > 0 {
			t := time.NewTimer(rest)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
	}
}

// slowWrite writes b chunk bytes every 50ms, holding mu for the whole
// message, until it is written, a write fails or ctx ends.
func slowWrite(ctx context.Context, out io.Writer, mu *sync.Mutex, b []byte, chunk int) {
	mu.Lock()
	defer mu.Unlock()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for len(b) > 0 {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		n := min(chunk, len(b))
		if _, err := out.Write(b[:n]); err != nil {
			return
		}
		b = b[n:]
	}
}

// slowReader reads one chunk per tick: a server that is slow, not stuck.
type slowReader struct {
	r     io.Reader
	chunk int
	tick  <-chan time.Time
}

func (s *slowReader) Read(p []byte) (int, error) {
	<-s.tick
	return s.r.Read(p[:min(len(p), s.chunk)])
}

// gulpReader reads at most 64 KiB at a time and, after each read, burns
// CPU for every before the next: the reader of a server busy computing.
type gulpReader struct {
	r     io.Reader
	every time.Duration
	on    *atomic.Bool
	last  time.Time
}

func (g *gulpReader) Read(p []byte) (int, error) {
	// Between gulps it burns a third of a CPU (3 ms spinning in every 9):
	// busy by the rule's floor of a tenth, on a loaded machine too, at a
	// third of the cost of a whole core.
	for end := g.last.Add(g.every); g.on.Load() && time.Now().Before(end); {
		for spin := time.Now().Add(3 * time.Millisecond); time.Now().Before(spin); {
		}
		time.Sleep(6 * time.Millisecond)
	}
	n, err := g.r.Read(p[:min(len(p), 64<<10)])
	g.last = time.Now()
	return n, err
}

// spacedJSON puts a space after every ':' and ',' outside strings.
func spacedJSON(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/8)
	in, esc := false, false
	for _, c := range b {
		out = append(out, c)
		switch {
		case esc:
			esc = false
		case in && c == '\\':
			esc = true
		case c == '"':
			in = !in
		case !in && (c == ':' || c == ','):
			out = append(out, ' ')
		}
	}
	return out
}

func hasOpt(opts map[string]string, k string) bool {
	_, ok := opts[k]
	return ok
}

func atoiOr(s string, d int) int {
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		return d
	}
	return n
}
