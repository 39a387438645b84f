package files

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// UploadScheme starts the URL of a file uploaded with a presigned PUT
// (Store.PresignUpload): baton-file:<sha256>.
const UploadScheme = "baton-file:"

// Input is a file as a request names it: the AI SDK's file part
// (mediaType, url, filename), where url is a data URL, an https URL (when
// the agent fetches them) or UploadScheme and the SHA-256 of an upload.
type Input struct {
	MediaType string `json:"mediaType"`
	URL       string `json:"url"`
	Name      string `json:"filename,omitempty"`
}

// label names input i in an error.
func (in Input) label(i int) string {
	if in.Name != "" {
		return fmt.Sprintf("%q", clip(in.Name))
	}
	return fmt.Sprintf("%d", i+1)
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// decodeData decodes a data URL: data:<media type>;base64,<bytes>. The
// declared type is the part's mediaType, else the URL's.
func decodeData(name, declared, u string, max int64) (string, []byte, error) {
	rest, _ := strings.CutPrefix(u, "data:")
	meta, payload, ok := strings.Cut(rest, ",")
	if !ok {
		return "", nil, refuse(BadFile, name, "is a data URL without a comma")
	}
	mt, b64 := strings.CutSuffix(meta, ";base64")
	if !b64 {
		return "", nil, refuse(BadFile, name, "is a data URL that is not base64")
	}
	mt, _, err := mime.ParseMediaType(mt)
	if err != nil && declared == "" {
		return "", nil, refuse(BadFile, name, "is a data URL without a media type")
	}
	if declared != "" {
		if mt != "" && mt != declared {
			return "", nil, refuse(Lies, name, "has mediaType %s but its data URL says %s", declared, mt)
		}
		mt = declared
	}
	if int64(base64.StdEncoding.DecodedLen(len(payload))) > max+3 {
		return mt, nil, refuse(TooBig, name, "is larger than the %d bytes the agent accepts", max)
	}
	data, err := base64.StdEncoding.DecodeString(payload)
	if err != nil {
		return mt, nil, refuse(BadFile, name, "is a data URL whose base64 does not decode: %v", err)
	}
	return mt, data, nil
}

// Fetcher fetches https URLs from public addresses only: the address a
// connection dials, after resolution (and after each redirect), must not
// be loopback, private (RFC 1918, fc00::/7), link-local (169.254.0.0/16,
// the metadata service 169.254.169.254 among them), CGNAT, unspecified or
// multicast. Its zero value is ready to use.
type Fetcher struct {
	// Timeout bounds one fetch; 0 is 20 s.
	Timeout time.Duration
	// allow, in tests only, lets an address pass.
	allow func(netip.Addr) bool
	// tls, in tests only, is the transport's TLS config.
	transport *http.Transport
}

// errPrivate is what the dialer's check returns.
var errPrivate = errors.New("a private address")

// Public reports whether ip is an address the Fetcher may dial.
func Public(ip netip.Addr) bool {
	ip = ip.Unmap()
	cgnat := netip.MustParsePrefix("100.64.0.0/10")
	return ip.IsValid() && !ip.IsLoopback() && !ip.IsPrivate() && !ip.IsLinkLocalUnicast() &&
		!ip.IsLinkLocalMulticast() && !ip.IsUnspecified() && !ip.IsMulticast() && !ip.IsInterfaceLocalMulticast() &&
		!cgnat.Contains(ip) && ip != netip.MustParseAddr("255.255.255.255")
}

func (f *Fetcher) client() *http.Client {
	allow := f.allow
	if allow == nil {
		allow = Public
	}
	d := &net.Dialer{Timeout: 5 * time.Second, Control: func(_, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil || !allow(ap.Addr()) {
			return fmt.Errorf("dial %s: %w", address, errPrivate)
		}
		return nil
	}}
	tr := &http.Transport{DialContext: d.DialContext, TLSHandshakeTimeout: 5 * time.Second, ForceAttemptHTTP2: true}
	if f.transport != nil {
		tr = f.transport
		tr.DialContext = d.DialContext
	}
	return &http.Client{Transport: tr, CheckRedirect: func(r *http.Request, via []*http.Request) error {
		if len(via) >= 3 {
			return errors.New("more than 3 redirects")
		}
		if r.URL.Scheme != "https" {
			return fmt.Errorf("a redirect to %s, not https", r.URL.Scheme)
		}
		return nil
	}}
}

// fetch reads the file at https URL u, at most max bytes.
func (f *Fetcher) fetch(ctx context.Context, name, u string, max int64) (string, []byte, error) {
	pu, err := url.Parse(u)
	if err != nil || pu.Scheme != "https" || pu.Host == "" {
		return "", nil, refuse(BadFile, name, "url must be a data URL, an https URL or an upload's %s URL", UploadScheme)
	}
	if ip, err := netip.ParseAddr(strings.Trim(pu.Hostname(), "[]")); err == nil && !Public(ip) && (f.allow == nil || !f.allow(ip)) {
		return "", nil, refuse(Private, name, "url %s names a private address", clip(u))
	}
	t := f.Timeout
	if t <= 0 {
		t = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, t)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", nil, refuse(BadFile, name, "url: %v", err)
	}
	resp, err := f.client().Do(req)
	if err != nil {
		if errors.Is(err, errPrivate) {
			return "", nil, refuse(Private, name, "url %s resolves to a private address", clip(u))
		}
		return "", nil, refuse(BadFile, name, "could not fetch %s: %v", clip(u), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", nil, refuse(BadFile, name, "fetching %s answered %s", clip(u), resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, max+1))
	if err != nil {
		return "", nil, refuse(BadFile, name, "reading %s: %v", clip(u), err)
	}
	if int64(len(data)) > max {
		return "", nil, refuse(TooBig, name, "is larger than the %d bytes the agent accepts", max)
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt, data, nil
}
