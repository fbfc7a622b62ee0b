package selfcheck_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"net"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/cmd/mcpauth/internal/selfcheck"
	"github.com/mcpauth/mcpauth/internal/golden"
	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/internal/safehttp"
)

func fixedNow() time.Time { return time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC) }

// guardedDial connects to loopback addresses only and fails the test for
// any other, so nothing leaves the machine even when a check goes wrong.
type guardedDial struct {
	t       *testing.T
	refused atomic.Int32
}

func (d *guardedDial) dial(ctx context.Context, network, address string) (net.Conn, error) {
	host, _, _ := net.SplitHostPort(address)
	if a, err := netip.ParseAddr(host); err != nil || !a.Unmap().IsLoopback() {
		d.refused.Add(1)
		d.t.Errorf("dial %s %s attempted; only loopback may be dialled", network, address)
		return nil, errors.New("dial refused by test")
	}
	var nd net.Dialer
	return nd.DialContext(ctx, network, address)
}

func config(t *testing.T, f *fake, token, tool string) selfcheck.Config {
	d := &guardedDial{t: t}
	return selfcheck.Config{
		URL:                       f.endpoint(),
		Token:                     token,
		StepUpTool:                tool,
		InsecureAllowHTTPLoopback: true,
		Fetch:                     safehttp.Options{Resolver: oauthtest.NewResolver(netip.MustParseAddr("169.254.169.254")), Dial: d.dial},
		Now:                       fixedNow,
	}
}

func run(t *testing.T, cfg selfcheck.Config) *selfcheck.Report {
	t.Helper()
	rep, err := selfcheck.Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

// nonPass returns the statuses of the results that did not pass or skip,
// by requirement ID (the worst one when an ID has several).
func nonPass(rep *selfcheck.Report) map[string]selfcheck.Status {
	out := map[string]selfcheck.Status{}
	for _, res := range rep.Results {
		if res.Status == selfcheck.StatusWarn && out[res.ID] != selfcheck.StatusFail {
			out[res.ID] = res.Status
		}
		if res.Status == selfcheck.StatusFail {
			out[res.ID] = res.Status
		}
	}
	return out
}

func table(t *testing.T, rep *selfcheck.Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCompliantServer: a server that follows every requirement passes every
// check, with and without a token; only what cannot be seen is skipped.
func TestCompliantServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, token, tool string
		wantSkip          []string
	}{
		{"with token and step-up tool", validToken, adminTool, []string{"RS-19", "RS-27"}},
		{"with token", validToken, "", []string{"RS-12", "RS-19", "RS-27"}},
		{"without token", "", "", []string{"RS-20", "RS-20", "TR-03", "RS-12", "RS-19", "RS-27"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(fakeOpts{})
			defer f.Close()
			rep := run(t, config(t, f, tt.token, tt.tool))
			var skipped []string
			for _, res := range rep.Results {
				switch res.Status {
				case selfcheck.StatusSkip:
					skipped = append(skipped, res.ID)
				case selfcheck.StatusPass:
				default:
					t.Errorf("%s %s: %s (%s)", res.ID, res.Name, res.Status, res.Detail)
				}
			}
			if strings.Join(skipped, ",") != strings.Join(tt.wantSkip, ",") {
				t.Errorf("skipped %v, want %v", skipped, tt.wantSkip)
			}
			if rep.Failed() {
				t.Error("Failed() = true")
			}
		})
	}
}

// TestBrokenServers: each deliberate defect is reported under its
// requirement ID with the right grade, and nothing else is.
func TestBrokenServers(t *testing.T) {
	t.Parallel()
	const (
		fail = selfcheck.StatusFail
		warn = selfcheck.StatusWarn
	)
	type want = map[string]selfcheck.Status
	tests := []struct {
		name    string
		o       fakeOpts
		noToken bool
		want    want
	}{
		{"RS-02 no metadata at the path-inserted URL", fakeOpts{noPRM: true}, false, want{"RS-02": fail, "RS-04": fail}},
		{"RS-02 metadata over the size cap", fakeOpts{huge: true}, false, want{"RS-02": fail, "RS-04": fail}},
		{"RS-03 metadata resource not identical", fakeOpts{wrongResource: true}, false, want{"RS-03": fail}},
		{"RS-01 no authorization servers", fakeOpts{noAuthServers: true}, false, want{"RS-01": fail}},
		{"RS-23 offline_access advertised", fakeOpts{offlineAccess: true}, false, want{"RS-23": warn}},
		{"RS-02 root metadata claims the endpoint", fakeOpts{rootClaimsPath: true}, false, want{"RS-02": warn}},
		{"RS-04 401 without resource_metadata", fakeOpts{noResourceMetadata: true}, false, want{"RS-04": warn, "RS-25": warn}},
		{"RS-04 no resource_metadata and no metadata", fakeOpts{noResourceMetadata: true, noPRM: true}, false, want{"RS-02": fail, "RS-04": fail, "RS-25": warn}},
		{"RS-06 error= on the 401 without a token", fakeOpts{errorOnNoToken: true}, false, want{"RS-06": warn}},
		{"RS-05 no scope= on the first 401", fakeOpts{noScope: true}, false, want{"RS-05": warn}},
		{"RS-07 invalid token accepted", fakeOpts{acceptGarbage: true}, false, want{"RS-07": fail}},
		{"RS-16 malformed Authorization gets 401", fakeOpts{malformedIs401: true}, false, want{"RS-16": warn}},
		{"RS-17 token accepted from the query", fakeOpts{acceptQuery: true}, false, want{"RS-17": fail}},
		{"TR-01 Origin ignored", fakeOpts{ignoreOrigin: true}, false, want{"TR-11": warn, "TR-01": fail}},
		{"TR-01 Origin ignored, no token to prove it", fakeOpts{ignoreOrigin: true}, true, want{"TR-11": warn, "TR-01": warn}},
		{"TR-11 Origin checked after authentication", fakeOpts{originAfterAuth: true}, false, want{"TR-11": warn}},
		{"RS-26 OPTIONS challenged", fakeOpts{optionsChallenged: true}, false, want{"RS-26": warn}},
		{"RS-26 WWW-Authenticate not exposed", fakeOpts{noExpose: true}, false, want{"RS-26": warn}},
		{"RS-20 authentication reused", fakeOpts{sticky: true}, false, want{"RS-20": fail}},
		{"TR-03 GET answered 200", fakeOpts{getOK: true}, false, want{"TR-03": warn}},
		{"RS-12 step-up 403 without scope", fakeOpts{stepUpNoScope: true}, false, want{"RS-12": warn}},
		{"RS-12 step-up answered 401", fakeOpts{stepUp401: true}, false, want{"RS-12": fail}},
		{"AS-03 no S256", fakeOpts{asNoS256: true}, false, want{"AS-03": fail}},
		{"CL-07 issuer mismatch", fakeOpts{asIssuerMismatch: true}, false, want{"CL-07": fail}},
		{"AS-06 iss not advertised", fakeOpts{asNoISS: true}, false, want{"AS-06": warn}},
		{"AS-15 CIMD not advertised", fakeOpts{asNoCIMD: true}, false, want{"AS-15": warn}},
		{"CL-06 metadata only at openid-configuration", fakeOpts{asOIDCOnly: true}, false, want{}},
		{"CL-06 no authorization server metadata", fakeOpts{asMissing: true}, false, want{"CL-06": fail}},
		{"RS-01 issuer with a query", fakeOpts{asList: []string{"https://as.example?x=1"}}, false, want{"RS-01": fail, "CL-06": fail}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(tt.o)
			defer f.Close()
			token, tool := validToken, adminTool
			if tt.noToken {
				token, tool = "", ""
			}
			rep := run(t, config(t, f, token, tool))
			got := nonPass(rep)
			for id, st := range tt.want {
				if got[id] != st {
					t.Errorf("%s = %q, want %q", id, got[id], st)
				}
			}
			for id, st := range got {
				if _, ok := tt.want[id]; !ok {
					t.Errorf("unexpected %s %s", id, st)
				}
			}
			wantFailed := false
			for _, st := range tt.want {
				wantFailed = wantFailed || st == fail
			}
			if rep.Failed() != wantFailed {
				t.Errorf("Failed() = %v, want %v", rep.Failed(), wantFailed)
			}
			if t.Failed() {
				t.Log("\n" + table(t, rep))
			}
		})
	}
}

// TestPointerSSRF covers RS-04 with CL-23: a resource_metadata the server
// names is fetched through the guarded fetcher, so internal targets are
// refused and reported without a connection being attempted.
func TestPointerSSRF(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, pointer string
		wantID        string
		wantStatus    selfcheck.Status
	}{
		{"CL-23 cloud metadata literal", "https://169.254.169.254/latest/meta-data/", "RS-04", selfcheck.StatusFail},
		{"CL-23 name resolving to cloud metadata", "https://metadata.attacker.example/prm", "RS-04", selfcheck.StatusFail},
		{"CL-23 private literal", "https://10.0.0.5/prm", "RS-04", selfcheck.StatusFail},
		{"plain http to a public host", "http://attacker.example/prm", "RS-04", selfcheck.StatusFail},
		{"javascript scheme", "javascript:alert(1)", "RS-04", selfcheck.StatusFail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(fakeOpts{pointer: tt.pointer})
			defer f.Close()
			rep := run(t, config(t, f, validToken, adminTool))
			if got := nonPass(rep); got[tt.wantID] != tt.wantStatus || len(got) != 1 {
				t.Errorf("non-pass = %v, want only %s %s\n%s", got, tt.wantID, tt.wantStatus, table(t, rep))
			}
		})
	}
}

// TestAuthServerSSRF: an authorization server listed in the metadata is
// fetched through the guarded fetcher too (CL-23): a name resolving to a
// private address is refused before any connection.
func TestAuthServerSSRF(t *testing.T) {
	t.Parallel()
	f := newFake(fakeOpts{asList: []string{"https://as.attacker.example"}})
	defer f.Close()
	rep := run(t, config(t, f, validToken, adminTool))
	if got := nonPass(rep); got["CL-06"] != selfcheck.StatusFail || len(got) != 1 {
		t.Errorf("non-pass = %v, want only CL-06 fail\n%s", got, table(t, rep))
	}
}

// TestPointerElsewhere: a resource_metadata naming another URL on the
// server is followed, and that document's resource is checked (RS-03).
func TestPointerElsewhere(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		o    fakeOpts
		want map[string]selfcheck.Status
	}{
		{"identical resource", fakeOpts{}, map[string]selfcheck.Status{}},
		{"RS-03 different resource", fakeOpts{wrongResource: true}, map[string]selfcheck.Status{"RS-03": selfcheck.StatusFail}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(tt.o)
			defer f.Close()
			f.o.pointer = f.URL + "/custom-prm"
			rep := run(t, config(t, f, validToken, adminTool))
			got := nonPass(rep)
			if len(got) != len(tt.want) || got["RS-03"] != tt.want["RS-03"] {
				t.Errorf("non-pass = %v, want %v\n%s", got, tt.want, table(t, rep))
			}
			n := 0
			for _, res := range rep.Results {
				if res.ID == "RS-03" {
					n++
				}
			}
			if n != 2 {
				t.Errorf("%d RS-03 results, want 2 (well-known and pointer)", n)
			}
		})
	}
}

// TestTokenNeverPrinted covers RS-24 for the checker itself: the token
// appears in neither the table nor the JSON, even when the server echoes it
// back and when a request carrying it in the URL fails.
func TestTokenNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, o := range []fakeOpts{
		{echoToken: true},
		{echoToken: true, acceptGarbage: true, stepUpNoScope: true},
		{closeOnQuery: true},
		{noPRM: true, echoToken: true, stepUp401: true},
	} {
		f := newFake(o)
		rep := run(t, config(t, f, validToken, adminTool))
		f.Close()
		js, err := json.Marshal(rep)
		if err != nil {
			t.Fatal(err)
		}
		for _, out := range []string{table(t, rep), string(js)} {
			if strings.Contains(out, validToken) || strings.Contains(out, validToken[:12]) {
				t.Errorf("token printed:\n%s", out)
			}
		}
	}
}

// TestUnreachable: a server that is not there fails the checks that need
// it, without an error from Run.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	f := newFake(fakeOpts{})
	cfg := config(t, f, validToken, adminTool)
	f.Close()
	rep := run(t, cfg)
	if !rep.Failed() {
		t.Errorf("Failed() = false\n%s", table(t, rep))
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  selfcheck.Config
	}{
		{"empty URL", selfcheck.Config{}},
		{"relative URL", selfcheck.Config{URL: "/mcp"}},
		{"plain http without the insecure switch", selfcheck.Config{URL: "http://127.0.0.1:8080/mcp"}},
		{"plain http to a public host", selfcheck.Config{URL: "http://mcp.example/mcp", InsecureAllowHTTPLoopback: true}},
		{"fragment", selfcheck.Config{URL: "https://mcp.example/mcp#x"}},
		{"Origin with a path", selfcheck.Config{URL: "https://mcp.example/mcp", Origin: "https://evil.example/x"}},
		{"token with a newline", selfcheck.Config{URL: "https://mcp.example/mcp", Token: "a\nb"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rep, err := selfcheck.Run(context.Background(), tt.cfg)
			if !errors.Is(err, selfcheck.ErrConfig) || rep != nil {
				t.Fatalf("Run = %v, %v; want ErrConfig", rep, err)
			}
		})
	}
}

// TestCanceled: an ended context stops the run and is returned with the
// partial report.
func TestCanceled(t *testing.T) {
	t.Parallel()
	f := newFake(fakeOpts{})
	defer f.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rep, err := selfcheck.Run(ctx, config(t, f, validToken, adminTool))
	if !errors.Is(err, context.Canceled) || rep == nil {
		t.Fatalf("Run = %v, %v", rep, err)
	}
}

// TestGolden pins the report's JSON encoding and table layout for a
// compliant server (the port is replaced, the clock is fixed).
func TestGolden(t *testing.T) {
	t.Parallel()
	f := newFake(fakeOpts{})
	defer f.Close()
	rep := run(t, config(t, f, validToken, adminTool))
	rep.URL = strings.ReplaceAll(rep.URL, f.URL, "http://127.0.0.1:PORT")
	for i := range rep.Results {
		rep.Results[i].Detail = strings.ReplaceAll(rep.Results[i].Detail, f.URL, "http://127.0.0.1:PORT")
	}
	golden.JSON(t, "report.json", rep)
	golden.Text(t, "report.txt", table(t, rep))

	// The JSON form decodes back into a Report.
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var back selfcheck.Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if back.URL != rep.URL || !back.Time.Equal(rep.Time) || !reflect.DeepEqual(back.Results, rep.Results) {
		t.Errorf("round trip: got %+v", back)
	}
}

// TestDPoPChecks: what a resource says about DPoP in its metadata and its
// 401 challenge, and what its authorization server accepts, is graded
// under RS-27, line by line.
func TestDPoPChecks(t *testing.T) {
	t.Parallel()
	const (
		pass = selfcheck.StatusPass
		warn = selfcheck.StatusWarn
		fail = selfcheck.StatusFail
		skip = selfcheck.StatusSkip

		mode = "DPoP support"
		req  = "DPoP requirement in metadata and challenge agree"
		algs = "DPoP algs in metadata and challenge agree"
		as   = "authorization server accepts a DPoP alg of the resource"
	)
	es, ed := []string{"ES256", "EdDSA"}, []string{"EdDSA", "ES256"}
	tests := []struct {
		name       string
		o          fakeOpts
		want       map[string]selfcheck.Status
		wantDetail string // in the detail of some RS-27 line
	}{
		{"Bearer only", fakeOpts{}, map[string]selfcheck.Status{mode: skip}, "Bearer tokens only"},
		{"required and consistent", fakeOpts{dpopMetaAlgs: es, dpopRequired: true, dpopChallenge: ed, dpopOnly: true, asDPoPAlgs: []string{"ES256"}},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: pass, as: pass}, "required"},
		{"allowed beside Bearer", fakeOpts{dpopMetaAlgs: es, dpopChallenge: es, asDPoPAlgs: es},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: pass, as: pass}, "supported beside Bearer"},
		{"algs differ", fakeOpts{dpopMetaAlgs: []string{"ES256"}, dpopChallenge: []string{"RS256"}, asDPoPAlgs: []string{"ES256", "RS256"}},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: warn, as: pass}, `the challenge algs="RS256"`},
		{"challenge without algs", fakeOpts{dpopMetaAlgs: es, dpopChallenge: es, dpopNoAlgs: true, asDPoPAlgs: es},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: warn, as: pass}, "the challenge has no algs"},
		{"metadata only", fakeOpts{dpopMetaAlgs: es, asDPoPAlgs: es},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: warn, as: pass}, "no DPoP challenge"},
		{"required in metadata, Bearer challenged", fakeOpts{dpopMetaAlgs: es, dpopRequired: true, dpopChallenge: es, asDPoPAlgs: es},
			map[string]selfcheck.Status{mode: pass, req: warn, algs: pass, as: pass}, "offers a Bearer challenge"},
		{"DPoP-only challenge, metadata not required", fakeOpts{dpopMetaAlgs: es, dpopChallenge: es, dpopOnly: true, asDPoPAlgs: es},
			map[string]selfcheck.Status{mode: pass, req: warn, algs: pass, as: pass}, "lacks dpop_bound_access_tokens_required"},
		{"required, no common alg with the authorization server", fakeOpts{dpopMetaAlgs: es, dpopRequired: true, dpopChallenge: es, dpopOnly: true,
			asDPoPAlgs: []string{"RS256"}}, map[string]selfcheck.Status{mode: pass, req: pass, algs: pass, as: fail}, `lists "RS256"`},
		{"required, authorization server without DPoP", fakeOpts{dpopMetaAlgs: es, dpopRequired: true, dpopChallenge: es, dpopOnly: true},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: pass, as: fail}, "advertises no dpop_signing_alg_values_supported"},
		{"allowed, authorization server without DPoP", fakeOpts{dpopMetaAlgs: es, dpopChallenge: es},
			map[string]selfcheck.Status{mode: pass, req: pass, algs: pass, as: warn}, "advertises no dpop_signing_alg_values_supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFake(tt.o)
			defer f.Close()
			rep := run(t, config(t, f, "", ""))
			got := map[string]selfcheck.Status{}
			details := ""
			for _, res := range rep.Results {
				if res.ID == "RS-27" {
					got[res.Name] = res.Status
					details += res.Detail + "\n"
				} else if res.ID == "RS-04" && res.Status != pass {
					t.Errorf("RS-04 %s: %s", res.Status, res.Detail)
				}
			}
			if !maps.Equal(got, tt.want) || !strings.Contains(details, tt.wantDetail) {
				t.Errorf("RS-27 lines %v, want %v; details %q lack %q", got, tt.want, details, tt.wantDetail)
			}
			if wantFail := slices.Contains(slices.Collect(maps.Values(tt.want)), fail); wantFail && !rep.Failed() {
				t.Error("report not failed")
			}
		})
	}
}
