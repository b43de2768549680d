package proxycmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
	"github.com/mcpstdio/mcpstdio/proxy"
)

// proxyState is where a proxy session keeps its record and its status
// file. Nothing here keeps the server from starting: what could not be
// made is said in problems, which go into the status file (and on stderr
// with -v, or once if neither the record nor the status file exists).
type proxyState struct {
	log        recordFile
	logPath    string
	statusPath string
	problems   []string
	procStart  uint64 // state.SelfStart
}

// recordFile is the record's file (a state.LogFile).
type recordFile interface {
	io.Writer
	Close() error
	Problem() string // why the last rotation failed, "" if none did
}

// openState makes the state directory, the record and the status file's
// place. The status file is always in the state directory (or, if that
// cannot be made, in state.FallbackDir), wherever -log puts the record,
// so that `mcpstdio status` finds every running proxy.
func openState(f *proxyFlags, command string, start time.Time) *proxyState {
	st := &proxyState{procStart: state.SelfStart()}
	name := state.SessionLogName(start, os.Getpid(), command)
	dir := f.dir
	if err := usableDir(dir); err != nil {
		fb := state.FallbackDir()
		if ferr := usableDir(fb); ferr != nil {
			st.problems = append(st.problems, fmt.Sprintf("no state directory: %v; nor %v", err, ferr))
			dir = ""
		} else {
			st.problems = append(st.problems, fmt.Sprintf("the state directory cannot be used (%v): using %s", err, fb))
			dir = fb
		}
	}
	if dir != "" {
		st.statusPath = filepath.Join(dir, name+state.StatusSuffix)
	}
	if f.noLog {
		return st
	}
	st.logPath = f.log
	if st.logPath == "" && dir != "" {
		st.logPath = filepath.Join(dir, name)
	}
	if st.logPath == "" {
		st.problems = append(st.problems, "nothing is recorded: no directory for the record (name one with -log)")
		return st
	}
	// The status file is read from anywhere: say where the record is
	// from anywhere.
	if abs, err := filepath.Abs(st.logPath); err == nil {
		st.logPath = abs
	}
	l, err := state.CreateLog(st.logPath, f.logMax, f.logKeep)
	if err != nil {
		st.problems = append(st.problems, fmt.Sprintf("nothing is recorded: %s", strings.TrimPrefix(err.Error(), "state: ")))
		st.logPath = ""
		return st
	}
	st.log = l
	return st
}

// usableDir makes dir private and checks that a file can be made in it.
func usableDir(dir string) error {
	if dir == "" {
		return fmt.Errorf("no per-user directory")
	}
	if err := state.PrivateDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// writeStatus is the proxy's Config.OnStatus.
func (st *proxyState) writeStatus(s proxy.Status) error {
	problems := st.problems
	if st.log != nil {
		if p := st.log.Problem(); p != "" {
			problems = append(slices.Clip(problems), p)
		}
	}
	return state.WriteStatus(st.statusPath, state.Status{Status: s, Log: st.logPath, Problems: problems, ProcStart: st.procStart})
}

// close removes the status file and closes the record.
func (st *proxyState) close() {
	if st.statusPath != "" {
		os.Remove(st.statusPath)
	}
	if st.log != nil {
		st.log.Close()
	}
}

// closeWithin is close, waiting for it at most limit; it reports whether
// close returned. A record whose write never returns (a hung file
// system) keeps its file from being closed, and the proxy, which went on
// without it (see proxy.Proxy.Wait), must end regardless: close's
// goroutine ends when that write returns, or with the process.
func (st *proxyState) closeWithin(limit time.Duration) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		st.close()
	}()
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// report says on stderr where the record is and what could not be done,
// with -v; without it, only if neither the record nor the status file can
// say it, and then once.
func (st *proxyState) report(name string, verbose bool, stderr io.Writer) {
	switch {
	case verbose:
		if st.log != nil {
			fmt.Fprintf(stderr, "%s: recording to %s\n", name, st.logPath)
		}
		for _, p := range st.problems {
			fmt.Fprintf(stderr, "%s: %s\n", name, p)
		}
	case len(st.problems) > 0 && st.statusPath == "" && st.log == nil:
		fmt.Fprintf(stderr, "%s: %s; the server runs regardless\n", name, strings.Join(st.problems, "; "))
	}
}
