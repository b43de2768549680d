// Command deafserver answers initialize and then never reads stdin again:
// it reads one byte at a time, so nothing after the initialize request
// leaves the pipe. Requests before initialize (a server/discover probe) get
// "method not found". The history test (../../cancelwrite_linux_test.go)
// runs the go-sdk clients against it.
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/signal"
	"syscall"
)

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		ProtocolVersion string `json:"protocolVersion"`
	} `json:"params"`
}

func main() {
	in := bufio.NewReaderSize(os.Stdin, 16) // no read-ahead past the line: one byte at a time below
	for {
		var line []byte
		for {
			b, err := in.ReadByte()
			if err != nil {
				os.Exit(0)
			}
			if b == '\n' {
				break
			}
			line = append(line, b)
		}
		var r request
		if json.Unmarshal(line, &r) != nil || r.ID == nil {
			continue
		}
		if r.Method != "initialize" {
			write(map[string]any{"jsonrpc": "2.0", "id": r.ID, "error": map[string]any{"code": -32601, "message": "method not found"}})
			continue
		}
		write(map[string]any{"jsonrpc": "2.0", "id": r.ID, "result": map[string]any{
			"protocolVersion": r.Params.ProtocolVersion, "capabilities": map[string]any{"tools": map[string]any{}},
			"serverInfo": map[string]any{"name": "deafserver", "version": "0"}}})
		break
	}
	// Deaf from here on, until a signal ends it.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
}

func write(v any) {
	b, _ := json.Marshal(v)
	os.Stdout.Write(append(b, '\n'))
}
