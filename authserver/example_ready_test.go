package authserver_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// A readiness endpoint asks Ready whether the upstream login and the
// trusted issuers' key sets can be had, answering only "ok" or "fail" and
// logging the reason.
func ExampleServer_Ready() {
	as, err := authserver.New(authserver.Config{Issuer: "https://as.example.com"})
	if err != nil {
		panic(err)
	}
	defer as.Close()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		if err := as.Ready(ctx); err != nil {
			slog.Warn("not ready", "err", err)
			http.Error(w, "fail", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("/", as) // serve mux: http.ListenAndServe(addr, mux)
	// Nothing upstream to wait for here.
	fmt.Println(as.Ready(context.Background()))
	// Output: <nil>
}
