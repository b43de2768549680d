package replay_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/replay"
)

// A record of a session with a stall: the host stopped reading while a
// large response blocked the server, sent a call, cancelled it, and read
// on. Here both sides of it are played against each other, compared
// message by message (Same): Serve plays the recorded server for Host,
// which plays the recorded host. With a real server, the target would be
// mcptest.Command or mcptest.Helper, judged by the rules without Same, and
// in a test TestServer does the same and reports through t.
func Example() {
	rec, err := replay.Load("testdata/session.ndjson")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, s := range rec.Stalls {
		fmt.Printf("stall: the host stopped reading at stdout byte %d; the proxy's write blocked for %v\n", s.At, s.Dur.Round(10*time.Millisecond))
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := replay.Host(ctx, mcptest.InProcess(replay.Serve(rec)), rec, replay.Same())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d messages checked, %d departures: %v\n", rep.Checked, len(rep.Departures), rep.Err())
	// Output:
	// stall: the host stopped reading at stdout byte 278; the proxy's write blocked for 40ms
	// 24 messages checked, 0 departures: <nil>
}

// Redact a record before committing it as test data: the values are
// hashed (or dropped, with "-"), so that equal values stay equal.
func ExampleRedact() {
	rec, err := replay.Load("testdata/session.ndjson", replay.Redact("params.arguments.text", "result.content.*.text"))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range rec.Host {
		if f.Tool == "echo" {
			fmt.Printf("%s\n", f.Body[strings.Index(string(f.Body), `"arguments"`):])
		}
	}
	var out strings.Builder
	if err := rec.Write(&out); err != nil { // a file in testdata
		fmt.Println(err)
	}
	fmt.Println(strings.Contains(out.String(), `"after"`))
	// Output:
	// "arguments":{"text":"sha256:e5396a5787cfb54f"},"name":"echo"}}
	// false
}
