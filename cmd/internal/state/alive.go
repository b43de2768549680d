package state

import (
	"os"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

// SelfStart returns this process's start time in clock ticks after boot
// (Linux), for Status.ProcStart; 0 where it cannot be told.
func SelfStart() uint64 {
	id, _ := proc.Identify(os.Getpid())
	return id.Start
}

// proxyGone reports whether the proxy that wrote st has ended; known is
// false where that cannot be told (no pid, or a system that can say
// neither whether the pid runs nor which process it is). On Linux a pid
// that the kernel gave to a later process (its start time differs from
// ProcStart) counts as ended, and so does a zombie. Where only the pid can
// be checked, a pid that runs says nothing: it may be another process's
// by now.
func proxyGone(st Status) (gone, known bool) {
	pid := st.ProxyPID
	if pid <= 0 {
		return false, false
	}
	if st.ProcStart != 0 {
		if _, ok := proc.Identify(pid); !ok {
			return pidGone(pid)
		}
		return !(proc.ID{PID: pid, Start: st.ProcStart}).Running(), true
	}
	if gone, known := pidGone(pid); gone {
		return true, known
	}
	return false, false
}

// proxyStopped reports whether the proxy st names is stopped (SIGSTOP,
// Linux).
func proxyStopped(st Status) bool {
	stopped, known := proc.Stopped(st.ProxyPID)
	return known && stopped
}
