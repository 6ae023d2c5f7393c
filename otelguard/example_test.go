package otelguard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mcpguard/mcpguard"
	"github.com/mcpguard/mcpguard/otelguard"
	"github.com/mcpguard/mcpguard/validate"
)

// Instrument a Guard, mount it with the decision span, and read the
// decision counter back (here from an in-memory reader; in production
// the application's MeterProvider exports it).
func Example() {
	reader := sdkmetric.NewManualReader()
	tel, err := otelguard.New(otelguard.Config{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err != nil {
		panic(err)
	}
	cfg := mcpguard.Config{
		Resource: "https://mcp.example.com/mcp",
		Issuers:  []string{"https://auth.example.com"},
		Keys:     map[string]validate.KeySource{"https://auth.example.com": &validate.StaticKeys{}},
	}
	tel.Instrument(&cfg)
	g, err := mcpguard.New(cfg)
	if err != nil {
		panic(err)
	}
	defer g.Close()
	mux := http.NewServeMux()
	tel.Mount(mux, g, http.NotFoundHandler())

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "https://mcp.example.com/mcp", nil))

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == "mcpguard.decisions" {
			dp := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			reason, _ := dp.Attributes.Value("mcpguard.decision.reason")
			fmt.Println(rec.Code, m.Name, reason.AsString(), dp.Value)
		}
	}
	// Output:
	// 401 mcpguard.decisions no_token 1
}
