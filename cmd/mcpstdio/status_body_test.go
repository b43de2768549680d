package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpstdio/mcpstdio/cmd/internal/cmdtest"
	"github.com/mcpstdio/mcpstdio/cmd/internal/page"
)

// TestStatusHTTPBodiesNeverSent: three times maxHTTPConns connections that
// send a request announcing a body and never send the body (without the
// token, with a wrong one, with the right one) do not keep the user's
// request from being answered: the server reads no body, and closes a
// refused request's connection at once. They locked the page for as long
// as they stayed open.
func TestStatusHTTPBodiesNeverSent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- runStatusHTTP(ctx, "127.0.0.1:0", func(time.Time) ([]page.Proxy, error) { return nil, nil }, pw, io.Discard)
		pw.Close()
	}()
	br := bufio.NewReader(pr)
	url, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, br)
	defer func() {
		cancel()
		if c := <-code; c != 0 {
			t.Errorf("runStatusHTTP returned %d", c)
		}
	}()
	url = strings.TrimSpace(url)
	host := strings.TrimPrefix(url[:strings.Index(url, "/?")], "http://")
	_, token, _ := strings.Cut(url, "?token=")
	bound := min(5*time.Second, cmdtest.Bound(t))
	var wg sync.WaitGroup
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
		wg.Wait()
	}()
	for i := range 3 * maxHTTPConns {
		c, err := net.Dial("tcp", host)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		tok := []string{"", "?token=wrong", "?token=" + token}[i%3]
		method := []string{"POST", "GET", "PUT"}[i%3]
		fmt.Fprintf(c, "%s /status.json%s HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\n", method, tok, host)
		// Its answer (a refusal, or 405) says the server has read it.
		answered := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			br := bufio.NewReader(c)
			br.ReadString('\n')
			close(answered)
			io.Copy(io.Discard, br)
		}()
		if i < maxHTTPConns { // the server keeps at most maxHTTPConns: the others it may close unanswered
			select {
			case <-answered:
			case <-time.After(bound):
				t.Fatalf("request %d (%s, announcing a body it never sends) not answered within %v: the server waits for its body", i, method, bound)
			}
		}
	}
	client := &http.Client{Timeout: bound}
	start := time.Now()
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("the user's request behind %d connections that announce a body: %v", len(conns), err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	client.CloseIdleConnections()
	if resp.StatusCode != 200 {
		t.Errorf("the user's request: %s", resp.Status)
	}
	t.Logf("answered in %v", time.Since(start))
}
