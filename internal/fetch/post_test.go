package fetch

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestPostForm(t *testing.T) {
	var other atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { other.Add(1) }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-www-form-urlencoded" ||
				r.Header.Get("Accept") != "application/json" || r.Header.Get("X-Auth") != "yes" || r.PostFormValue("token") != "a b&c" {
				http.Error(w, "bad request", http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			_, _ = io.WriteString(w, `{"active":true}`)
		case "/html":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, `{}`)
		case "/big":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"x":"`+strings.Repeat("x", 100)+`"}`)
		case "/redirect":
			http.Redirect(w, r, target.URL, http.StatusTemporaryRedirect)
		case "/busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	following := &http.Client{}
	tests := []struct {
		name       string
		url        string
		client     *http.Client
		wantErr    error
		wantStatus int
	}{
		{name: "ok", url: srv.URL + "/ok"},
		{name: "wrong media type", url: srv.URL + "/html", wantErr: ErrContentType},
		{name: "too large", url: srv.URL + "/big", wantErr: ErrTooLarge},
		{name: "redirect not followed", url: srv.URL + "/redirect", wantErr: ErrStatus, wantStatus: 307},
		{name: "redirect not followed with a following client", url: srv.URL + "/redirect", client: following, wantErr: ErrStatus, wantStatus: 307},
		{name: "status", url: srv.URL + "/busy", wantErr: ErrStatus, wantStatus: 429},
		{name: "http not loopback", url: "http://example.com/x", wantErr: ErrInsecureURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.client
			if c == nil {
				c = NewClient(ClientConfig{Redirects: SameOrigin})
			}
			resp, err := PostForm(t.Context(), c, tt.url, url.Values{"token": {"a b&c"}}, http.Header{"X-Auth": {"yes"}}, 64)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("PostForm = %v, want %v", err, tt.wantErr)
			}
			var se *StatusError
			if errors.As(err, &se) && se.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", se.Code, tt.wantStatus)
			}
			if err == nil && string(resp.Body) != `{"active":true}` {
				t.Errorf("body = %q", resp.Body)
			}
		})
	}
	if n := other.Load(); n != 0 {
		t.Errorf("redirect target saw %d requests", n)
	}
	if following.CheckRedirect != nil {
		t.Errorf("PostForm changed the caller's client")
	}
}
