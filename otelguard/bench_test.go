package otelguard_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/mcpguard/mcpguard/authtest"
	"github.com/mcpguard/mcpguard/middleware"
	"github.com/mcpguard/mcpguard/otelguard"
	"github.com/mcpguard/mcpguard/prm"
	"github.com/mcpguard/mcpguard/validate"
)

type rewind struct{ bytes.Reader }

func (*rewind) Close() error { return nil }

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkHooks: an authorized, cached tools/call without telemetry,
// with the otelguard metric hooks (OnDecision and the validator's
// Observer, an SDK MeterProvider), and with the decision span as well
// (the default, no-op, tracer).
func BenchmarkHooks(b *testing.B) {
	iss := authtest.NewIssuer(b, authtest.IssuerConfig{Audience: resource})
	tel, err := otelguard.New(otelguard.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))})
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	for _, c := range []struct {
		name         string
		hooks, trace bool
	}{{"otel=off", false, false}, {"otel=metrics", true, false}, {"otel=metrics+span", true, true}} {
		vc := validate.Config{
			Issuers:   []validate.Issuer{{Issuer: iss.URL, Keys: &validate.StaticKeys{Set: iss.Keys()}}},
			Audiences: []string{resource},
			Now:       iss.Now,
		}
		mc := middleware.Config{Metadata: prm.Metadata{Resource: resource, AuthorizationServers: []string{iss.URL}}, Now: iss.Now}
		if c.hooks {
			vc.Observer, mc.OnDecision = tel.ObserveValidation, tel.OnDecision
		}
		v, err := validate.New(vc)
		if err != nil {
			b.Fatal(err)
		}
		mc.Validator = v
		m, err := middleware.New(mc)
		if err != nil {
			b.Fatal(err)
		}
		h := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
		if c.trace {
			h = tel.Handler(h)
		}
		r := httptest.NewRequest(http.MethodPost, resource, nil)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Authorization", "Bearer "+iss.Token(b, authtest.Token{}))
		rb := &rewind{}
		r.Body, r.ContentLength = rb, int64(len(body))
		w := &discardWriter{h: http.Header{}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				rb.Reset(body)
				h.ServeHTTP(w, r)
			}
		})
	}
}
