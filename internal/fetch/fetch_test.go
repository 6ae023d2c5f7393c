package fetch

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCheckURL(t *testing.T) {
	tests := []struct {
		name     string
		raw      string
		loopback bool
		wantErr  error
	}{
		{name: "https", raw: "https://a.example/x?y=1"},
		{name: "https port", raw: "https://a.example:8443/"},
		{name: "https ip", raw: "https://192.0.2.1/"},
		{name: "http refused", raw: "http://a.example/", wantErr: ErrInsecureURL},
		{name: "http remote refused even with loopback allowed", raw: "http://a.example/", loopback: true, wantErr: ErrInsecureURL},
		{name: "http loopback refused without option", raw: "http://127.0.0.1/", wantErr: ErrInsecureURL},
		{name: "http 127.0.0.1", raw: "http://127.0.0.1:8080/x", loopback: true},
		{name: "http 127.2.3.4", raw: "http://127.2.3.4/", loopback: true},
		{name: "http ::1", raw: "http://[::1]:80/", loopback: true},
		{name: "http localhost", raw: "http://localhost:1/", loopback: true},
		{name: "http LOCALHOST", raw: "http://LOCALHOST/", loopback: true},
		{name: "http localhost. refused", raw: "http://localhost./", loopback: true, wantErr: ErrInsecureURL},
		{name: "http localhost subdomain refused", raw: "http://localhost.evil.example/", loopback: true, wantErr: ErrInsecureURL},
		{name: "http ipv4-mapped loopback", raw: "http://[::ffff:127.0.0.1]/", loopback: true},
		{name: "userinfo", raw: "https://u:p@a.example/", wantErr: ErrInsecureURL},
		{name: "user only", raw: "https://u@a.example/", wantErr: ErrInsecureURL},
		{name: "fragment", raw: "https://a.example/#f", wantErr: ErrInsecureURL},
		{name: "empty fragment", raw: "https://a.example/#", wantErr: ErrInsecureURL},
		{name: "relative", raw: "/x", wantErr: ErrInsecureURL},
		{name: "scheme-relative", raw: "//a.example/x", wantErr: ErrInsecureURL},
		{name: "opaque", raw: "https:a.example", wantErr: ErrInsecureURL},
		{name: "empty host", raw: "https:///x", wantErr: ErrInsecureURL},
		{name: "port without host", raw: "https://:443/x", wantErr: ErrInsecureURL},
		{name: "ftp", raw: "ftp://a.example/", wantErr: ErrInsecureURL},
		{name: "file", raw: "file:///etc/passwd", loopback: true, wantErr: ErrInsecureURL},
		{name: "unparsable", raw: "https://a.example/%zz", wantErr: ErrInsecureURL},
		{name: "control character", raw: "https://a.example/\x7f", wantErr: ErrInsecureURL},
		{name: "empty", raw: "", wantErr: ErrInsecureURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u, err := CheckURL(tt.raw, tt.loopback)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckURL(%q, %v) error = %v, want %v", tt.raw, tt.loopback, err, tt.wantErr)
			}
			if err == nil && u == nil {
				t.Fatalf("CheckURL(%q) returned nil url", tt.raw)
			}
		})
	}
}

func TestIsJSONMediaType(t *testing.T) {
	tests := []struct {
		v    string
		want bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"Application/JSON", true},
		{"application/jwk-set+json", true},
		{"application/problem+json; charset=utf-8", true},
		{"application/vnd.api+json", true},
		{"", false},
		{"text/json", false},
		{"text/plain", false},
		{"text/html; charset=utf-8", false},
		{"application/jsonx", false},
		{"application/json-seq", false},
		{"text/x+json", false},
		{"application/octet-stream", false},
		{"application/json; charset", false}, // malformed parameter
		{";", false},
	}
	for _, tt := range tests {
		if got := IsJSONMediaType(tt.v); got != tt.want {
			t.Errorf("IsJSONMediaType(%q) = %v, want %v", tt.v, got, tt.want)
		}
	}
}

func gzipped(t *testing.T, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, _ = zw.Write([]byte(`{"a":"`))
	if _, err := zw.Write(bytes.Repeat([]byte("a"), n)); err != nil {
		t.Fatal(err)
	}
	_, _ = zw.Write([]byte(`"}`))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGet(t *testing.T) {
	const max = 1 << 10
	bomb := gzipped(t, 4<<20) // 4 MiB of "a" in ~4 KiB
	small := gzipped(t, 10)
	tests := []struct {
		name       string
		handler    http.HandlerFunc
		timeout    time.Duration
		wantErr    error
		wantStatus int
		wantRetry  time.Duration
		wantBody   string
	}{
		{
			name: "ok",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"a":"b"}`)
			},
			wantBody: `{"a":"b"}`,
		},
		{
			name: "jwk-set+json",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/jwk-set+json")
				_, _ = io.WriteString(w, `{"keys":[]}`)
			},
			wantBody: `{"keys":[]}`,
		},
		{
			name: "exactly max bytes",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `"`+strings.Repeat("a", max-2)+`"`)
			},
			wantBody: `"` + strings.Repeat("a", max-2) + `"`,
		},
		{
			name: "one byte over max",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `"`+strings.Repeat("a", max-1)+`"`)
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "endless body is cut",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				chunk := bytes.Repeat([]byte("a"), 4096)
				for r.Context().Err() == nil {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "gzip decoded",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(small)
			},
			wantBody: `{"a":"aaaaaaaaaa"}`,
		},
		{
			name: "gzip bomb",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Header().Set("Content-Encoding", "gzip")
				_, _ = w.Write(bomb)
			},
			wantErr: ErrTooLarge,
		},
		{
			name: "404",
			handler: func(w http.ResponseWriter, r *http.Request) {
				http.NotFound(w, r)
			},
			wantErr: ErrStatus, wantStatus: 404,
		},
		{
			name: "429 with retry-after",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "7")
				w.WriteHeader(http.StatusTooManyRequests)
			},
			wantErr: ErrStatus, wantStatus: 429, wantRetry: 7 * time.Second,
		},
		{
			name: "503 with http-date retry-after",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT")
				w.WriteHeader(http.StatusServiceUnavailable)
			},
			wantErr: ErrStatus, wantStatus: 503,
		},
		{
			name: "204",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			},
			wantErr: ErrStatus, wantStatus: 204,
		},
		{
			name: "html",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = io.WriteString(w, `{}`)
			},
			wantErr: ErrContentType,
		},
		{
			name: "no content type",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header()["Content-Type"] = nil // suppress sniffing
				_, _ = io.WriteString(w, `{}`)
			},
			wantErr: ErrContentType,
		},
		{
			name: "empty body",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
			},
			wantBody: "",
		},
		{
			name: "invalid json",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"a":`)
			},
			wantBody: `{"a":`,
		},
		{
			name: "slow body cut by timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"a":`)
				w.(http.Flusher).Flush()
				<-r.Context().Done() // until the client gives up (or the server closes)
			},
			timeout: 150 * time.Millisecond,
			wantErr: ErrTransport,
		},
		{
			name: "slow headers cut by timeout",
			handler: func(w http.ResponseWriter, r *http.Request) {
				<-r.Context().Done() // until the client gives up (or the server closes)
			},
			timeout: 150 * time.Millisecond,
			wantErr: ErrTransport,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var accept atomic.Value
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				accept.Store(r.Header.Get("Accept"))
				tt.handler(w, r)
			}))
			defer srv.Close()
			c := NewClient(ClientConfig{Timeout: tt.timeout})

			// A slow server holds the request until the client gives up:
			// a Get that did not end on its own Timeout ends only with
			// this context, generous for a loaded machine.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			resp, err := Get(ctx, c, srv.URL, max)
			if ctx.Err() != nil {
				t.Fatalf("Get ended with its context (%v), not its Timeout %v: %v", ctx.Err(), tt.timeout, err)
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Get error = %v, want %v", err, tt.wantErr)
			}
			var se *StatusError
			if errors.As(err, &se) {
				if se.Code != tt.wantStatus || se.RetryAfter != tt.wantRetry {
					t.Errorf("StatusError = %+v, want code %d retry %v", se, tt.wantStatus, tt.wantRetry)
				}
			} else if tt.wantStatus != 0 {
				t.Errorf("error %v is not a *StatusError", err)
			}
			if err == nil {
				if string(resp.Body) != tt.wantBody {
					t.Errorf("body = %q, want %q", resp.Body, tt.wantBody)
				}
				if got := accept.Load(); got != "application/json" {
					t.Errorf("Accept = %q, want application/json", got)
				}
			}
		})
	}
}

func TestGetRefusesInsecureURL(t *testing.T) {
	c := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		t.Fatal("request sent for an insecure url")
		return nil, nil
	})}
	for _, raw := range []string{"http://a.example/x", "https://u@a.example/", "https://a.example/#x", "ftp://a.example/", "::"} {
		if _, err := Get(t.Context(), c, raw, 10); !errors.Is(err, ErrInsecureURL) {
			t.Errorf("Get(%q) error = %v, want %v", raw, err, ErrInsecureURL)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestGetContextDeadline(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release: // the test ends (a Get that ignored its context holds on)
		}
	}))
	defer srv.Close()
	defer close(release) // before Close, which waits for the handler
	// The server holds the request until the client gives up, and the
	// client's own Timeout is an hour: a Get that ignored its context
	// gives no answer within the generous wait below.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := Get(ctx, NewClient(ClientConfig{Timeout: time.Hour}), srv.URL, 10)
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, ErrTransport) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Get error = %v, want %v and %v", err, ErrTransport, context.DeadlineExceeded)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Get did not end with its context's deadline (100ms)")
	}
}

func TestReadBounded(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		max     int64
		wantErr error
	}{
		{name: "under", in: "abc", max: 4},
		{name: "equal", in: "abcd", max: 4},
		{name: "over", in: "abcde", max: 4, wantErr: ErrTooLarge},
		{name: "empty", in: "", max: 4},
		{name: "zero cap refuses any byte", in: "a", max: 0, wantErr: ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadBounded(strings.NewReader(tt.in), tt.max)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ReadBounded error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && string(got) != tt.in {
				t.Errorf("ReadBounded = %q, want %q", got, tt.in)
			}
		})
	}
	if _, err := ReadBounded(iotestErrReader{}, 10); !errors.Is(err, ErrTransport) {
		t.Errorf("ReadBounded(failing reader) error = %v, want %v", err, ErrTransport)
	}
}

type iotestErrReader struct{}

func (iotestErrReader) Read([]byte) (int, error) { return 0, errors.New("boom") }
