//go:build unix && !linux

package proxy

// pollRDHUP: there is no such poll(2) event here; a socket's peer is seen
// gone when it closes (POLLHUP).
const pollRDHUP = 0
