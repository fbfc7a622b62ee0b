package resource_test

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/keyset"
	"github.com/mcpauth/mcpauth/resource"
)

// discardExporter drops the spans the SDK hands it.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkTracing: the cache-hit request through the whole middleware
// with tracing off (no TracerProvider: the default), with the
// OpenTelemetry API's no-op provider, and with the SDK recording every
// span (sampled, batched to an exporter that drops them). Off must cost
// what BenchmarkCacheHit cost before tracing existed (see BENCHMARKS.md).
func BenchmarkTracing(b *testing.B) {
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
	b.Cleanup(func() { _ = sdk.Shutdown(context.Background()) })
	for _, tt := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"tracing=off", nil},
		{"tracing=noop", noop.NewTracerProvider()},
		{"tracing=sdk", sdk},
	} {
		b.Run(tt.name, func(b *testing.B) {
			key, clock := oauthtest.NewKey(b, oauthtest.ES256, "k1"), oauthtest.NewClock(oauthtest.Epoch())
			v, err := resource.New(resource.Config{
				Resource:       testResource,
				Issuers:        []resource.Issuer{{Issuer: testIssuer, Keys: keyset.Static{{ID: "k1", Public: key.Public()}}}},
				Now:            clock.Now,
				TracerProvider: tt.tp,
			})
			if err != nil {
				b.Fatal(err)
			}
			defer v.Close()
			e := &benchEnv{key: key, clock: clock, v: v}
			tok := e.tokens(b, 1)[0]
			h := v.Middleware(okHandler)
			w := &nopWriter{h: http.Header{}}
			br := newBenchRequest(tok, listBody)
			authz := "Bearer " + tok
			h.ServeHTTP(w, br.reset(authz))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				h.ServeHTTP(w, br.reset(authz))
			}
		})
	}
}
