package fakeserver_test

import (
	"bufio"
	"context"
	"fmt"
	"os"

	"github.com/mcpstdio/mcpstdio/fakeserver"
)

// A host under test talks to the fake over real pipes; here the "host" is
// a few lines of code. The big tool makes a response line of an exact size,
// and the report tells what the server saw.
func Example() {
	stdinR, stdinW, _ := os.Pipe()
	stdoutR, stdoutW, _ := os.Pipe()
	defer stdoutR.Close()

	srv := fakeserver.New(fakeserver.WithEra(fakeserver.EraLegacy))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), stdinR, stdoutW, nil) }()

	fmt.Fprintln(stdinW, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"frameSize":1000,"kind":"multibyte"}}}`)
	line, _ := bufio.NewReaderSize(stdoutR, 1<<16).ReadBytes('\n')
	fmt.Println("response line:", len(line)-1, "bytes")

	stdinW.Close() // EOF: the server exits
	fmt.Println("Serve:", <-done)
	rep := srv.Report()
	fmt.Println("requests:", len(rep.Requests), rep.Requests[0].Tool, rep.Requests[0].State)
	fmt.Println("stdout bytes:", rep.StdoutBytes)
	// Output:
	// response line: 1000 bytes
	// Serve: <nil>
	// requests: 1 big done
	// stdout bytes: 1001
}
