package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/mcptest"
	"github.com/mcpstdio/mcpstdio/proxy"
	"github.com/mcpstdio/mcpstdio/record"
)

// A proxy between a host's streams and a server, recording what passes.
func Example() {
	// The server: here this module's fake server, run as a child of the
	// test binary; in a program, exec.Command("./myserver", "--stdio").
	cmd, err := mcptest.HelperCommand(context.Background(), "fake")
	if err != nil {
		fmt.Println(err)
		return
	}

	// The host's side: in a process, os.Stdin, os.Stdout and os.Stderr.
	hostIn, toServer, _ := os.Pipe()
	fromServer, hostOut, _ := os.Pipe()
	defer fromServer.Close()

	var rec bytes.Buffer // a *proxy.LogFile in practice
	p, err := proxy.Start(context.Background(), cmd,
		proxy.Streams{Stdin: hostIn, Stdout: hostOut, Stderr: io.Discard},
		proxy.Config{Record: &rec})
	if err != nil {
		fmt.Println(err)
		return
	}
	toServer.WriteString(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	line, _ := bufio.NewReader(fromServer).ReadString('\n')
	fmt.Print("host got: ", line)
	toServer.Close() // the host is done: the server sees EOF and exits

	res, err := p.Wait()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("server:", res.Exit.Text)
	record.Read(&rec, func(e record.Event) error {
		if e.Ev == record.EvFrame {
			fmt.Println("frame:", e.Dir, e.Kind, e.Method, string(e.ID), e.N, "bytes")
		}
		return nil
	})
	// Output:
	// host got: {"jsonrpc":"2.0","id":1,"result":{}}
	// server: exit status 0
	// frame: in request ping 1 40 bytes
	// frame: out response  1 36 bytes
}
