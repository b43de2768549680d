package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
	"github.com/mcpstdio/mcpstdio/cmd/internal/state"
)

// defaultHTTPAddr is where `status -http` listens when no address is given.
const defaultHTTPAddr = "127.0.0.1:0"

// httpFlag is -http: alone it means defaultHTTPAddr, -http=ADDR or -http
// ADDR (taken from the arguments by takeHTTPAddr) an address.
type httpFlag struct {
	on   bool
	addr string
}

func (f *httpFlag) String() string   { return f.addr }
func (f *httpFlag) IsBoolFlag() bool { return true }
func (f *httpFlag) Set(s string) error {
	switch s {
	case "true":
		f.on = true
	case "false":
		f.on, f.addr = false, ""
	default:
		f.on, f.addr = true, s
	}
	return nil
}

// takeHTTPAddr takes the address after a bare -http from args: the first
// argument, if it is HOST:PORT (whatever the port) and not a file;
// checkHTTPAddr then refuses a port that is not a number.
func (f *httpFlag) takeHTTPAddr(args []string) []string {
	if !f.on || f.addr != "" || len(args) == 0 {
		return args
	}
	if _, _, err := net.SplitHostPort(args[0]); err == nil {
		if _, err := os.Stat(args[0]); err != nil {
			f.addr = args[0]
			return args[1:]
		}
	}
	return args
}

// checkHTTPAddr refuses an -http address that is not HOST:PORT with a
// numeric port ("localhost:http" would otherwise be looked up as a
// service).
func checkHTTPAddr(addr string) error {
	if addr == "" {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q is not HOST:PORT: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// runStatusHTTP serves the live page of the proxies that list returns on
// addr (loopback only) until a signal or ctx ends it, and prints its URL.
func runStatusHTTP(ctx context.Context, addr string, list func(time.Time) ([]page.Proxy, error), stdout, stderr io.Writer) int {
	if err := checkHTTPAddr(addr); err != nil {
		fmt.Fprintf(stderr, "mcpstdio status: -http refused: %v\n", err)
		return 2
	}
	if addr == "" {
		addr = defaultHTTPAddr
	}
	laddr, err := page.CheckLoopback(addr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio status: -http refused: %v\n", err)
		return 2
	}
	ln, err := net.Listen("tcp", laddr)
	if err != nil {
		fmt.Fprintf(stderr, "mcpstdio status: %v\n", err)
		return 1
	}
	if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		ln.Close()
		fmt.Fprintf(stderr, "mcpstdio status: -http refused: listening on %s, not a loopback address\n", ln.Addr())
		return 2
	}
	tok := make([]byte, 16)
	if _, err := rand.Read(tok); err != nil {
		ln.Close()
		fmt.Fprintf(stderr, "mcpstdio status: %v\n", err)
		return 1
	}
	lim := newConnLimit(ln, maxHTTPConns)
	srv := &http.Server{
		Handler:           &page.Server{Token: hex.EncodeToString(tok), List: list},
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       10 * time.Second, // every request's read, its body too (the handler reads none)
		WriteTimeout:      30 * time.Second, // a client that does not read its answer
		IdleTimeout:       30 * time.Second, // the page asks twice a second
		ConnState:         lim.track,
	}
	fmt.Fprintf(stdout, "http://%s/?token=%s\n", ln.Addr(), hex.EncodeToString(tok))
	fmt.Fprintln(stderr, "mcpstdio status: serving the live page (read-only; the token keeps other local users out); interrupt to stop")
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(lim) }()
	select {
	case err = <-done:
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		err = srv.Shutdown(sctx)
		cancel()
		if err != nil {
			srv.Close()
		}
		<-done
		err = nil
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintf(stderr, "mcpstdio status: %v\n", err)
		return 1
	}
	return 0
}

// statusLister returns the function the live page lists proxies with: the
// status files given, or those in dir and the fallback directory (as
// `status` looks); stale ones only with all.
func statusLister(dirs, files []string, all bool) func(time.Time) ([]page.Proxy, error) {
	return func(now time.Time) ([]page.Proxy, error) {
		var ents []state.StatusEntry
		var errs []error
		for _, p := range files {
			ents = append(ents, state.ReadStatus(p, now))
		}
		if len(files) == 0 {
			for _, d := range dirs {
				es, err := state.ReadStatuses(d, now)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					errs = append(errs, err)
				}
				ents = append(ents, es...)
			}
		}
		var ps []page.Proxy
		for _, e := range ents {
			if e.Err != nil {
				errs = append(errs, e.Err)
				continue
			}
			if e.Stale && !all {
				continue
			}
			log, noLog := e.Status.Log, ""
			if e.LogErr != nil { // never read a record the status file has no say over
				log, noLog = "", e.LogErr.Error()+" (mcpstdio show reads it)"
				e.Status.Problems = append(e.Status.Problems, e.LogErr.Error())
			}
			ps = append(ps, page.Proxy{Path: e.Path, Stale: e.Stale, Start: e.Status.Start, Log: log, NoLog: noLog, Status: e.Status})
		}
		return ps, errors.Join(errs...)
	}
}
