package client

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// errReader fails on the first Read.
type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read failed") }

// closeRecorder records Close calls.
type closeRecorder struct {
	io.Reader
	closed int
}

func (c *closeRecorder) Close() error { c.closed++; return nil }

func TestBodyReplay(t *testing.T) {
	const payload = `{"jsonrpc":"2.0","id":1,"method":"tools/call"}`
	big := strings.Repeat("x", maxReplayBytes+1)
	tests := []struct {
		name         string
		body         func() io.Reader
		noGetBody    bool
		getBodyErr   bool
		wantErr      bool
		wantStatus   int
		wantBodies   []string
		wantAuthzCnt int
	}{
		{
			name: "GetBody (bytes.Reader)", body: func() io.Reader { return bytes.NewReader([]byte(payload)) },
			wantStatus: 200, wantBodies: []string{payload, payload}, wantAuthzCnt: 1,
		},
		{
			name: "no GetBody: buffered", body: func() io.Reader { return strings.NewReader(payload) }, noGetBody: true,
			wantStatus: 200, wantBodies: []string{payload, payload}, wantAuthzCnt: 1,
		},
		{
			name: "no GetBody, empty", body: func() io.Reader { return strings.NewReader("") }, noGetBody: true,
			wantStatus: 200, wantBodies: []string{"", ""}, wantAuthzCnt: 1,
		},
		{
			name: "no body", body: func() io.Reader { return nil },
			wantStatus: 200, wantBodies: []string{"", ""}, wantAuthzCnt: 1,
		},
		{
			name: "too large without GetBody: sent once, 401 returned", body: func() io.Reader { return strings.NewReader(big) },
			noGetBody: true, wantStatus: 401, wantBodies: []string{big},
		},
		{
			name: "GetBody fails on retry", body: func() io.Reader { return strings.NewReader(payload) }, getBodyErr: true,
			wantErr: true, wantBodies: []string{payload}, wantAuthzCnt: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFake(t)
			a := &fakeAuthz{}
			tr, err := New(Config{Resource: f.resource, Authorizer: a})
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest(http.MethodPost, f.resource, tt.body())
			var rec *closeRecorder
			if tt.noGetBody {
				rec = &closeRecorder{Reader: req.Body}
				req.Body, req.GetBody, req.ContentLength = rec, nil, 0
			}
			if tt.getBodyErr {
				req.GetBody = func() (io.ReadCloser, error) { return nil, errors.New("no") }
			}
			resp, err := tr.RoundTrip(req)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, want error %v", err, tt.wantErr)
			}
			if err == nil {
				resp.Body.Close()
				if resp.StatusCode != tt.wantStatus {
					t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
				}
			}
			f.mu.Lock()
			bodies := f.bodies
			f.mu.Unlock()
			if len(bodies) != len(tt.wantBodies) {
				t.Fatalf("server got %d bodies, want %d", len(bodies), len(tt.wantBodies))
			}
			for i := range bodies {
				if bodies[i] != tt.wantBodies[i] {
					t.Errorf("body %d has %d bytes, want %d", i, len(bodies[i]), len(tt.wantBodies[i]))
				}
			}
			if len(a.calls) != tt.wantAuthzCnt {
				t.Errorf("Authorize calls = %d, want %d", len(a.calls), tt.wantAuthzCnt)
			}
			if rec != nil && rec.closed == 0 {
				t.Error("caller's body was not closed")
			}
		})
	}
}

func TestBodyReadError(t *testing.T) {
	f := newFake(t)
	tr, err := New(Config{Resource: f.resource, Authorizer: &fakeAuthz{}})
	if err != nil {
		t.Fatal(err)
	}
	rec := &closeRecorder{Reader: errReader{}}
	req, _ := http.NewRequest(http.MethodPost, f.resource, nil)
	req.Body = rec
	if _, err := tr.RoundTrip(req); err == nil {
		t.Fatal("no error for a failing body")
	}
	if rec.closed == 0 {
		t.Error("caller's body was not closed")
	}
	if reqs, _ := f.counts(); reqs != 0 {
		t.Errorf("requests = %d, want 0", reqs)
	}
}
