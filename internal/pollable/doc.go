// Package pollable makes a process's own stdio files interruptible: a
// duplicate descriptor in non-blocking mode, which the Go runtime polls, so
// that closing it or a deadline ends a blocked Read or Write. The fake
// server's ServeStdio and the proxy command use it.
package pollable
