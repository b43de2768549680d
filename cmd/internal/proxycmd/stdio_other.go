//go:build !unix

package proxycmd

import (
	"io"
	"os"

	"github.com/mcpstdio/mcpstdio/proxy"
)

// passedSignals: on Windows only an interrupt (Ctrl-C, Ctrl-Break) reaches
// a console program, and the console delivers it to the server as well, so
// the proxy records it and does not pass it on.
var passedSignals = []os.Signal{os.Interrupt}

func ignoreSIGPIPE() {}

// HostStreams returns the streams as they are: on Windows a blocked read of
// the host's stdin ends when the proxy exits.
func HostStreams(stdin io.Reader, stdout, stderr io.Writer) (proxy.Streams, func()) {
	return proxy.Streams{Stdin: stdin, Stdout: stdout, Stderr: stderr}, func() {}
}
