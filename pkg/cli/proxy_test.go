package cli_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// cutProxy is a TCP proxy in front of a real server that cuts the
// connection carrying an event-stream response once cutAfter bytes of it
// have passed, for the first maxCuts such responses. It keeps what clients
// sent, to show how they reconnected.
type cutProxy struct {
	ln       net.Listener
	target   string
	cutAfter int
	maxCuts  int

	mu       sync.Mutex
	cuts     int
	requests bytes.Buffer
}

func startCutProxy(t *testing.T, target string, cutAfter, maxCuts int) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cutAfter: cutAfter, maxCuts: maxCuts}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Cuts is how many connections the proxy cut.
func (p *cutProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Requests is everything clients sent through the proxy.
func (p *cutProxy) Requests() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests.String()
}

func (p *cutProxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		go p.handle(c)
	}
}

func (p *cutProxy) handle(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		return
	}
	defer server.Close()
	go func() {
		buf := make([]byte, 32<<10)
		for {
			n, err := client.Read(buf)
			if n > 0 {
				p.mu.Lock()
				p.requests.Write(buf[:n])
				p.mu.Unlock()
				if _, werr := server.Write(buf[:n]); werr != nil {
					return
				}
			}
			if err != nil {
				server.Close()
				return
			}
		}
	}()
	marker := []byte("Content-Type: text/event-stream")
	var tail []byte // the last response bytes, while looking for the marker
	passed := -1    // event-stream bytes passed; -1 before the marker
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		chunk := buf[:n]
		if passed < 0 && n > 0 {
			from := len(tail)
			tail = append(tail, chunk...)
			if i := bytes.Index(tail, marker); i >= 0 {
				// Pass the response up to the marker's end; count the rest.
				upto := i + len(marker) - from
				if _, werr := client.Write(chunk[:upto]); werr != nil {
					return
				}
				chunk, passed, tail = chunk[upto:], 0, nil
			} else if len(tail) > len(marker) {
				tail = append([]byte(nil), tail[len(tail)-len(marker):]...)
			}
		}
		if passed >= 0 && passed+len(chunk) > p.cutAfter && p.takeCut() {
			_, _ = client.Write(chunk[:max(p.cutAfter-passed, 0)])
			return // closes both connections mid-response
		}
		if passed >= 0 {
			passed += len(chunk)
		}
		if _, werr := client.Write(chunk); werr != nil || err != nil {
			return
		}
	}
}

// takeCut reports whether one more connection may be cut.
func (p *cutProxy) takeCut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cuts >= p.maxCuts {
		return false
	}
	p.cuts++
	return true
}
