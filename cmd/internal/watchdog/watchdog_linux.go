//go:build linux

package watchdog

import (
	"crypto/rand"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/internal/proc"
)

const (
	// lookEvery is how often the command tells the watchdog what it has
	// started: a process that leaves the command's tree and clears its
	// environment within one period of starting can escape.
	lookEvery = 200 * time.Millisecond
	// lookLimit bounds the processes one look tells.
	lookLimit = 4096
	// closeWithin bounds how long Close waits for the watchdog.
	closeWithin = 5 * time.Second
)

// Guard is a running watchdog, as Start returns it; Close ends it.
type Guard struct {
	cmd     *exec.Cmd
	w       *os.File // the pipe's write end, the command's alone
	key     string   // the marker's variable
	stop    chan struct{}
	looking chan struct{} // closed when look returns
	waited  chan struct{} // closed when the watchdog is reaped
	once    sync.Once

	// Of look's goroutine only: what it has told.
	procs  map[proc.ID]bool
	groups map[int]bool
}

// Start starts the watchdog of this process (see the package comment) and
// puts the marker in this process's environment, for every child started
// after it returns. The caller must call Close when everything it started
// has ended; Close is what tells the watchdog that this process ends
// normally. Start fails where /proc/self/exe cannot be run.
func Start() (*Guard, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	key := fmt.Sprintf("MCPSTDIO_WATCHED_%d_%x", os.Getpid(), nonce)
	r, w, err := os.Pipe() // close-on-exec: only the watchdog gets r, as its stdin
	if err != nil {
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{"mcpstdio-watchdog"},
		Env:   append(os.Environ(), roleEnv+"="+key+"=1"),
		Stdin: r,
		// A session and process group of its own: a signal to this
		// process's group, or its terminal's, does not take it.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true}}
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	g := &Guard{cmd: cmd, w: w, key: key, stop: make(chan struct{}), looking: make(chan struct{}), waited: make(chan struct{}),
		procs: map[proc.ID]bool{}, groups: map[int]bool{}}
	go func() { _ = cmd.Wait(); close(g.waited) }()
	if err := os.Setenv(key, "1"); err != nil {
		g.Close()
		return nil, fmt.Errorf("watchdog: %w", err)
	}
	go g.look()
	return g, nil
}

// Close tells the watchdog that this process ends normally and waits for it
// to exit (at most a few seconds, then kills it). It kills nothing else:
// what this process started must have ended already. It is safe to call
// twice.
func (g *Guard) Close() {
	g.once.Do(func() {
		close(g.stop)
		// A watchdog that does not read (stopped) must not hold us.
		_ = g.w.SetWriteDeadline(time.Now().Add(time.Second))
		<-g.looking
		_, _ = g.w.WriteString("done\n")
		g.w.Close()
		_ = os.Unsetenv(g.key)
		t := time.NewTimer(closeWithin)
		defer t.Stop()
		select {
		case <-g.waited:
		case <-t.C:
			_ = g.cmd.Process.Kill()
			<-g.waited
		}
	})
}

// look tells the watchdog, now and every lookEvery until Close, what this
// process has started.
func (g *Guard) look() {
	defer close(g.looking)
	t := time.NewTicker(lookEvery)
	defer t.Stop()
	for {
		if _, err := g.w.WriteString(g.news()); err != nil {
			return // the watchdog is gone, or Close gave up on it
		}
		select {
		case <-g.stop:
			return
		case <-t.C:
		}
	}
}

// news returns the lines that tell the watchdog what is new since the last
// look: "p PID START" for each process descended from this one, "g PGID"
// for each process group a child of this one leads, "u PGID" for each told
// group that has no process left (so that a reused number is never
// killed).
func (g *Guard) news() string {
	var b strings.Builder
	self, dog := os.Getpid(), g.cmd.Process.Pid
	now := map[proc.ID]bool{}
	for _, pid := range proc.Descendants(self, lookLimit) {
		st, ok := proc.ReadStat(pid)
		if pid == dog || !ok || st.State == 'Z' || st.State == 'X' {
			continue
		}
		id := proc.ID{PID: pid, Start: st.Start}
		now[id] = true
		if !g.procs[id] {
			fmt.Fprintf(&b, "p %d %d\n", pid, st.Start)
		}
		if st.PPID == self && st.Group == pid && !g.groups[pid] {
			g.groups[pid] = true
			fmt.Fprintf(&b, "g %d\n", pid)
		}
	}
	// The watchdog keeps what left the tree; only new ones are told.
	g.procs = now
	for pgid := range g.groups {
		if syscall.Kill(-pgid, 0) == syscall.ESRCH {
			delete(g.groups, pgid)
			fmt.Fprintf(&b, "u %d\n", pgid)
		}
	}
	return b.String()
}
