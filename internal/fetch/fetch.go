package fetch

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Response is what [Get] returns: the bounded body and the response header.
type Response struct {
	Body   []byte
	Header http.Header
}

// Get fetches rawURL with a GET request that accepts JSON and returns the
// body, read up to maxBytes after decompression. It requires status 200 and
// a JSON media type (application/json or any +json suffix). rawURL must pass
// [CheckURL] with loopback http allowed (https, or http to a loopback host);
// otherwise the error wraps [ErrInsecureURL] and nothing is sent. The
// caller's client supplies the deadline, redirect policy and dial guard; ctx
// may shorten the deadline.
func Get(ctx context.Context, c *http.Client, rawURL string, maxBytes int64) (*Response, error) {
	if _, err := CheckURL(rawURL, true); err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInsecureURL, err)
	}
	return do(c, req, maxBytes)
}

// do sends req, which it marks as accepting JSON, with c and applies the
// response checks that [Get] and [PostForm] document: status 200 (else a
// [StatusError]), a JSON media type (else [ErrContentType]) and a body of at
// most maxBytes after decompression (else [ErrTooLarge]). A transport
// failure is mapped by transportErr.
func do(c *http.Client, req *http.Request, maxBytes int64) (*Response, error) {
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, transportErr(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		se := &StatusError{Code: resp.StatusCode, RetryAfter: retryAfter(resp.Header.Get("Retry-After"))}
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && IsJSONMediaType(resp.Header.Get("Content-Type")) {
			if b, err := ReadBounded(resp.Body, MaxErrorBodyBytes); err == nil {
				se.Body = b
			}
		}
		// Drain a little so the connection can be reused; never much.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return nil, se
	}
	if ct := resp.Header.Get("Content-Type"); !IsJSONMediaType(ct) {
		if len(ct) > 64 {
			ct = ct[:64]
		}
		return nil, fmt.Errorf("%w: %q", ErrContentType, ct)
	}
	body, err := ReadBounded(resp.Body, maxBytes)
	if err != nil {
		return nil, err
	}
	return &Response{Body: body, Header: resp.Header}, nil
}

// ReadBounded reads all of r, failing with [ErrTooLarge] past maxBytes.
func ReadBounded(r io.Reader, maxBytes int64) ([]byte, error) {
	var buf bytes.Buffer
	n, err := buf.ReadFrom(io.LimitReader(r, maxBytes+1))
	if err != nil {
		return nil, transportErr(err)
	}
	if n > maxBytes {
		return nil, ErrTooLarge
	}
	return buf.Bytes(), nil
}

// IsJSONMediaType reports whether a Content-Type header value names JSON:
// application/json or a type with the +json structured suffix
// (application/jwk-set+json, …).
func IsJSONMediaType(v string) bool {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func retryAfter(v string) time.Duration {
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 || n > 86400 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// CheckURL parses raw and requires an absolute https URL without userinfo
// or fragment. With allowHTTPLoopback, http is accepted when the host is a
// loopback address or "localhost".
func CheckURL(raw string, allowHTTPLoopback bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInsecureURL, err)
	}
	switch {
	case u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		return nil, fmt.Errorf("%w: not an absolute url", ErrInsecureURL)
	case u.User != nil:
		return nil, fmt.Errorf("%w: userinfo not allowed", ErrInsecureURL)
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return nil, fmt.Errorf("%w: fragment not allowed", ErrInsecureURL)
	case u.Scheme == "https":
		return u, nil
	case u.Scheme == "http" && allowHTTPLoopback && IsLoopbackHost(u.Hostname()):
		return u, nil
	}
	return nil, fmt.Errorf("%w: scheme must be https", ErrInsecureURL)
}

// IsLoopbackHost reports whether host (without port) is "localhost" or a
// loopback IP literal.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}
