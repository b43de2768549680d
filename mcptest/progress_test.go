package mcptest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/wire"
)

// scriptServer answers each request line with the lines reply returns, in
// order, written as they are.
func scriptServer(reply func(req *wire.Message) []string) mcptest.ServeFunc {
	return func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, _ io.Writer) error {
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			m, err := wire.ParseMessage(sc.Bytes())
			if err != nil || !m.IsRequest() {
				continue
			}
			for _, line := range reply(m) {
				if _, err := io.WriteString(out, line+"\n"); err != nil {
					return err
				}
			}
		}
		return sc.Err()
	}
}

// TestProgressCount: progress is counted per token of a request the host
// sent, whatever the server's JSON encoder escapes; tokens the host never
// gave out are not counted by token.
func TestProgressCount(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, mcptest.InProcess(scriptServer(func(req *wire.Message) []string {
		var p struct {
			Meta struct {
				Token json.RawMessage `json:"progressToken"`
			} `json:"_meta"`
		}
		json.Unmarshal(req.Params, &p)
		var out []string
		for range 3 { // the token as a non-Go encoder writes it: & unescaped
			out = append(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"a&b","progress":1}}`)
		}
		out = append(out, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"stranger","progress":1}}`)
		return append(out, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"token":%s}}`, req.ID, p.Meta.Token))
	})), mcptest.WithoutHandshake())
	p := s.Send(wire.MethodToolsCall, map[string]any{"name": "x", "_meta": map[string]any{"progressToken": "a&b"}})
	if _, err := p.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := p.Progress(); got != 3 {
		t.Errorf("Progress() = %d, want 3: the server wrote the token a&b, the host sent a\u0026b", got)
	}
	if got := s.Stats().Notifications; got != 4 {
		t.Errorf("Stats().Notifications = %d, want 4", got)
	}
}

// TestServerPingWithAHostID: once the server has answered something, a
// request from it whose id and method match a pending host request is the
// server's own, not an echo: it is answered and the host's request is not
// failed.
func TestServerPingWithAHostID(t *testing.T) {
	t.Parallel()
	s := mcptest.StartServer(t, mcptest.InProcess(scriptServer(func(req *wire.Message) []string {
		if req.Method != wire.MethodPing {
			return nil // the host's answer to the server's ping
		}
		ping := fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"ping"}`, req.ID)
		return []string{`{"jsonrpc":"2.0","id":999,"result":{}}`, ping, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)}
	})), mcptest.WithProtocolVersion(wire.Version20251125), mcptest.WithoutHandshake())
	if err := s.Ping(t.Context()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if st := s.Stats(); st.ServerRequests != 1 || st.Responses != 1 || st.UnknownIDs != 1 {
		t.Errorf("Stats: ServerRequests %d, Responses %d, UnknownIDs %d; want 1, 1, 1", st.ServerRequests, st.Responses, st.UnknownIDs)
	}
}

// TestPartlyWrittenRequestAnsweredLate: a request whose write timed out
// part-way still reaches the server whole with the next write; its answer
// is a late response, not an unknown id.
func TestPartlyWrittenRequestAnsweredLate(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	serve := scriptServer(func(req *wire.Message) []string {
		return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{}}`, req.ID)}
	})
	s := mcptest.StartServer(t, mcptest.InProcess(func(ctx context.Context, in io.ReadCloser, out io.WriteCloser, e io.Writer) error {
		select {
		case <-release:
		case <-ctx.Done():
			return nil
		}
		return serve(ctx, in, out, e)
	}), mcptest.WithoutHandshake(), mcptest.WithPipeCapacity(4096), mcptest.WithTimeout(300*time.Millisecond))
	first := s.Send(wire.MethodToolsCall, map[string]any{"pad": strings.Repeat("x", 20000)})
	if _, err := first.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "still gets it whole") {
		t.Fatalf("first Send: err = %v, want a timeout that says the message will still be delivered", err)
	}
	if !strings.Contains(s.Diagnose(), "partly written message") {
		t.Errorf("Diagnose does not mention the partly written message:\n%s", s.Diagnose())
	}
	close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := s.Call(ctx, wire.MethodToolsCall, map[string]any{"name": "second"}); err != nil {
		t.Fatalf("second call: %v", err)
	}
	if st := s.Stats(); st.LateResponses != 1 || st.UnknownIDs != 0 || st.Responses != 2 {
		t.Errorf("Stats: LateResponses %d, UnknownIDs %d, Responses %d; want 1, 0, 2", st.LateResponses, st.UnknownIDs, st.Responses)
	}
}
