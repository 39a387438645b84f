package cli_test

import (
	"bytes"
	"net"
	"sync"
	"testing"
)

// cutProxy is a TCP proxy in front of a real server that cuts connections
// in the middle of an event-stream response, where cut says, for the first
// len(cuts) such responses. It keeps what clients sent, to show how they
// reconnected.
type cutProxy struct {
	ln     net.Listener
	target string
	// cuts[n] returns where in an event-stream body seen so far the nth
	// cut falls, or -1 while it has not come yet.
	cuts []func(body []byte) int

	mu       sync.Mutex
	cut      int // cuts made
	requests bytes.Buffer
	// streaming are the client connections carrying an event stream.
	streaming map[net.Conn]bool
}

// textDelta starts the data line of a text delta event.
var textDelta = []byte("\ndata: {\"type\":\"text-delta\"")

// midLine cuts inside the first text delta's data line that starts after
// offset from.
func midLine(from int) func([]byte) int {
	return func(body []byte) int {
		i := bytes.Index(body[min(from, len(body)):], textDelta)
		if i < 0 || from+i+len(textDelta)+4 > len(body) {
			return -1
		}
		return from + i + len(textDelta) + 4
	}
}

// beforeBlank cuts after the first whole text delta's data line that
// starts after offset from, before the blank line that would end its event.
func beforeBlank(from int) func([]byte) int {
	return func(body []byte) int {
		i := bytes.Index(body[min(from, len(body)):], textDelta)
		if i < 0 {
			return -1
		}
		end := bytes.IndexByte(body[from+i+1:], '\n')
		if end < 0 {
			return -1
		}
		return from + i + 1 + end + 1
	}
}

func startCutProxy(t *testing.T, target string, cuts ...func([]byte) int) *cutProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{ln: ln, target: target, cuts: cuts, streaming: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close() })
	go p.serve()
	return p
}

func (p *cutProxy) URL() string { return "http://" + p.ln.Addr().String() }

// Cuts is how many connections the proxy cut.
func (p *cutProxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut
}

// DropStreams closes every connection carrying an event stream and
// returns how many it closed.
func (p *cutProxy) DropStreams() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for c := range p.streaming {
		c.Close()
		delete(p.streaming, c)
		n++
	}
	return n
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
	defer func() {
		p.mu.Lock()
		delete(p.streaming, client)
		p.mu.Unlock()
		client.Close()
	}()
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
	var body []byte // the event-stream bytes passed; nil before the marker
	streaming := false
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		chunk := buf[:n]
		if !streaming && n > 0 {
			from := len(tail)
			tail = append(tail, chunk...)
			if i := bytes.Index(tail, marker); i >= 0 {
				// Pass the response up to the marker's end; watch the rest.
				upto := i + len(marker) - from
				if _, werr := client.Write(chunk[:upto]); werr != nil {
					return
				}
				chunk, streaming, tail = chunk[upto:], true, nil
				p.mu.Lock()
				p.streaming[client] = true
				p.mu.Unlock()
			} else if len(tail) > len(marker) {
				tail = append([]byte(nil), tail[len(tail)-len(marker):]...)
			}
		}
		if streaming {
			before := len(body)
			body = append(body, chunk...)
			if at := p.cutAt(body); at >= 0 {
				_, _ = client.Write(body[before:max(at, before)])
				return // closes both connections mid-response
			}
		}
		if _, werr := client.Write(chunk); werr != nil || err != nil {
			return
		}
	}
}

// cutAt returns where the next cut falls in body, counting it as made, or
// -1 for no cut.
func (p *cutProxy) cutAt(body []byte) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut >= len(p.cuts) {
		return -1
	}
	at := p.cuts[p.cut](body)
	if at >= 0 {
		p.cut++
	}
	return at
}
