package proxy

import "golang.org/x/sys/unix"

// pollRDHUP is the poll(2) event of a socket whose peer shut down writing.
const pollRDHUP = unix.POLLRDHUP
