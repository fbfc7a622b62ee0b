package resource

import (
	"strings"
	"testing"
)

// BenchmarkScanMessage measures the JSON-RPC body scan alone, for a 1 KiB
// tools/call body.
func BenchmarkScanMessage(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/srv/data/report.txt","content":"` +
		strings.Repeat("lorem ipsum ", 76) + `"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := scanMessage(body); err != nil {
			b.Fatal(err)
		}
	}
}
