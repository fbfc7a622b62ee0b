package selfcheck_test

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"

	"github.com/mcpauth/mcpauth/internal/oauthtest"
	"github.com/mcpauth/mcpauth/oauthmeta"
)

// validToken is the fake server's one valid access token. It has the
// scope mcp:tools but not mcp:admin, which the tool adminTool needs.
const (
	validToken = "s3cret-Valid.Token_for-the-fake"
	adminTool  = "admin_echo"
)

// fakeOpts breaks the compliant fake server in one way each.
type fakeOpts struct {
	noPRM              bool   // RS-02: no metadata at the path-inserted URL
	wrongResource      bool   // RS-03: metadata names URL + "/"
	huge               bool   // metadata and tools/list results over 1 MiB
	noAuthServers      bool   // RS-01: authorization_servers absent
	offlineAccess      bool   // RS-23: offline_access advertised
	rootClaimsPath     bool   // RS-02: root metadata names the endpoint
	pointer            string // RS-04: resource_metadata value instead of the path-inserted URL
	noResourceMetadata bool   // RS-04, RS-25: challenges without resource_metadata
	errorOnNoToken     bool   // RS-06: error=invalid_token without credentials
	noScope            bool   // RS-05: no scope= on the first 401
	acceptGarbage      bool   // RS-07: any bearer token is valid
	malformedIs401     bool   // RS-16: "Bearer a b" gets 401
	acceptQuery        bool   // RS-17: ?access_token= accepted
	closeOnQuery       bool   // transport error on ?access_token=
	ignoreOrigin       bool   // TR-01: Origin never checked
	originAfterAuth    bool   // TR-11: Origin checked after authentication
	optionsChallenged  bool   // RS-26: OPTIONS gets 401
	noExpose           bool   // RS-26: WWW-Authenticate not exposed
	sticky             bool   // RS-20: authenticated once, authenticated for good
	getOK              bool   // TR-03: GET answered 200
	stepUpNoScope      bool   // RS-12: 403 without scope=
	stepUp401          bool   // RS-12: insufficient scope answered 401
	echoToken          bool   // the presented token echoed in every error the server writes
	asNoS256           bool   // AS-03
	asIssuerMismatch   bool   // CL-07
	asNoISS            bool   // AS-06
	asNoCIMD           bool   // AS-15
	asOIDCOnly         bool   // CL-06: metadata only at openid-configuration
	asMissing          bool   // CL-06: no metadata at all
	asList             []string
	next               http.Handler // serves authorized tools/list; nil: a canned result

	// RS-27: DPoP. dpopChallenge, when not nil, adds a DPoP challenge
	// with these algs to every 401 (dpopNoAlgs: without algs); dpopOnly
	// drops the Bearer challenge.
	dpopMetaAlgs  []string
	dpopRequired  bool
	dpopChallenge []string
	dpopNoAlgs    bool
	dpopOnly      bool
	asDPoPAlgs    []string
}

// fake is a small MCP server that follows the requirements unless told
// otherwise: PRM, challenges, Origin, CORS, a scope per tool, and an
// authorization server (oauthtest.AS) on the same origin.
type fake struct {
	*httptest.Server
	o      fakeOpts
	mu     sync.Mutex
	authed bool // for the sticky variant
}

func newFake(o fakeOpts) *fake {
	f := &fake{o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", f.prm)
	mux.HandleFunc("/.well-known/oauth-protected-resource", f.rootPRM)
	mux.HandleFunc("/custom-prm", f.prm)
	mux.HandleFunc("/mcp", f.mcp)
	f.Server = httptest.NewUnstartedServer(mux)
	asOpts := oauthtest.ASOptions{OmitCodeChallenge: o.asNoS256, NoISSAdvertised: o.asNoISS, CIMD: !o.asNoCIMD, DPoPAlgs: o.asDPoPAlgs}
	switch {
	case o.asMissing:
		asOpts.MetadataAt = "none"
	case o.asOIDCOnly:
		asOpts.MetadataAt = "openid"
	}
	if o.asIssuerMismatch {
		asOpts.MetadataIssuer = "https://as.example"
	}
	mux.Handle("/", oauthtest.NewASAt("http://"+f.Listener.Addr().String(), asOpts))
	f.Start()
	return f
}

func (f *fake) endpoint() string { return f.URL + "/mcp" }
func (f *fake) prmURL() string   { return f.URL + "/.well-known/oauth-protected-resource/mcp" }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fake) prm(w http.ResponseWriter, r *http.Request) {
	if f.o.noPRM {
		http.NotFound(w, r)
		return
	}
	m := oauthmeta.ProtectedResourceMetadata{
		Resource:               f.endpoint(),
		AuthorizationServers:   []string{f.URL},
		ScopesSupported:        []string{"mcp:tools", "mcp:admin"},
		BearerMethodsSupported: []string{"header"},
	}
	if f.o.wrongResource {
		m.Resource += "/"
	}
	if f.o.noAuthServers {
		m.AuthorizationServers = nil
	}
	if f.o.asList != nil {
		m.AuthorizationServers = f.o.asList
	}
	if f.o.offlineAccess {
		m.ScopesSupported = append(m.ScopesSupported, "offline_access")
	}
	m.DPoPSigningAlgValuesSupported, m.DPoPBoundAccessTokensRequired = f.o.dpopMetaAlgs, f.o.dpopRequired
	if f.o.huge {
		m.ResourceDocumentation = f.URL + "/" + strings.Repeat("x", 1<<20)
	}
	writeJSON(w, http.StatusOK, m)
}

func (f *fake) rootPRM(w http.ResponseWriter, _ *http.Request) {
	res := f.URL
	if f.o.rootClaimsPath {
		res = f.endpoint()
	}
	writeJSON(w, http.StatusOK, oauthmeta.ProtectedResourceMetadata{Resource: res, AuthorizationServers: []string{f.URL}})
}

// challenge writes a Bearer challenge with the given status and params
// (name, value pairs), adding resource_metadata.
func (f *fake) challenge(w http.ResponseWriter, r *http.Request, status int, params ...string) {
	ch := oauthmeta.Challenge{Scheme: "Bearer"}
	for i := 0; i+1 < len(params); i += 2 {
		ch.Params = append(ch.Params, oauthmeta.Param{Name: params[i], Value: params[i+1]})
	}
	if f.o.echoToken {
		ch.Params = append(ch.Params, oauthmeta.Param{Name: oauthmeta.ParamErrorDescription, Value: "rejected " + presented(r)})
	}
	if !f.o.noResourceMetadata {
		rm := f.prmURL()
		if f.o.pointer != "" {
			rm = f.o.pointer
		}
		ch.Params = append(ch.Params, oauthmeta.Param{Name: oauthmeta.ParamResourceMetadata, Value: rm})
	}
	if !f.o.dpopOnly {
		w.Header().Add("WWW-Authenticate", ch.String())
	}
	if f.o.dpopChallenge != nil && status == http.StatusUnauthorized {
		d := oauthmeta.Challenge{Scheme: "DPoP", Params: ch.Params}
		if !f.o.dpopNoAlgs {
			d.Params = append(slices.Clone(d.Params), oauthmeta.Param{Name: oauthmeta.ParamAlgs, Value: strings.Join(f.o.dpopChallenge, " ")})
		}
		w.Header().Add("WWW-Authenticate", d.String())
	}
	w.WriteHeader(status)
}

// presented is the token the request carried, wherever it was.
func presented(r *http.Request) string {
	if t := r.URL.Query().Get("access_token"); t != "" {
		return t
	}
	return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
}

func (f *fake) originAllowed(r *http.Request) bool {
	o := r.Header.Get("Origin")
	return f.o.ignoreOrigin || o == "" || o == f.URL
}

func (f *fake) mcp(w http.ResponseWriter, r *http.Request) {
	if !f.o.noExpose {
		w.Header().Set("Access-Control-Expose-Headers", "WWW-Authenticate")
	}
	if r.Method == http.MethodOptions && !f.o.optionsChallenged {
		w.Header().Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
		w.Header().Set("Access-Control-Allow-Methods", "POST")
		w.Header().Set("Access-Control-Allow-Headers", "authorization, content-type, mcp-method, mcp-name, mcp-protocol-version")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !f.o.originAfterAuth && !f.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	if !f.authenticate(w, r) {
		return
	}
	if f.o.originAfterAuth && !f.originAllowed(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	if r.Method != http.MethodPost {
		if f.o.getOK {
			w.Header().Set("Content-Type", "text/event-stream")
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	f.call(w, r)
}

// authenticate answers and returns false unless the request carries the
// valid token in the Authorization header (RS-04..RS-17).
func (f *fake) authenticate(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	if q := r.URL.Query().Get("access_token"); q != "" && auth == "" {
		switch {
		case f.o.closeOnQuery:
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					c.Close()
				}
			}
			return false
		case f.o.acceptQuery && q == validToken:
			return true
		}
		f.challenge(w, r, http.StatusBadRequest, "error", "invalid_request")
		return false
	}
	if auth == "" {
		f.mu.Lock()
		sticky := f.o.sticky && f.authed
		f.mu.Unlock()
		if sticky {
			return true
		}
		var params []string
		if f.o.errorOnNoToken {
			params = append(params, "error", "invalid_token")
		}
		if !f.o.noScope {
			scope := "mcp:tools"
			if f.o.offlineAccess {
				scope += " offline_access"
			}
			params = append(params, "scope", scope)
		}
		f.challenge(w, r, http.StatusUnauthorized, params...)
		return false
	}
	tok, ok := strings.CutPrefix(auth, "Bearer ")
	if !ok || tok == "" || strings.ContainsAny(tok, " \t") {
		status := http.StatusBadRequest
		if f.o.malformedIs401 {
			status = http.StatusUnauthorized
		}
		f.challenge(w, r, status, "error", "invalid_request")
		return false
	}
	if tok != validToken && !f.o.acceptGarbage {
		f.challenge(w, r, http.StatusUnauthorized, "error", "invalid_token")
		return false
	}
	f.mu.Lock()
	f.authed = true
	f.mu.Unlock()
	return true
}

// call checks the mirrored headers against the body and authorizes per
// tool (RS-12, RS-15).
func (f *fake) call(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var msg struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string         `json:"name"`
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "error": map[string]any{"code": -32700, "message": "parse error"}})
		return
	}
	name := r.Header.Get("Mcp-Name")
	if enc, ok := strings.CutPrefix(name, "=?base64?"); ok {
		dec, _ := base64.StdEncoding.DecodeString(strings.TrimSuffix(enc, "?="))
		name = string(dec)
	}
	if r.Header.Get("Mcp-Method") != msg.Method || r.Header.Get("MCP-Protocol-Version") != "2026-07-28" ||
		msg.Params.Meta["io.modelcontextprotocol/protocolVersion"] != "2026-07-28" ||
		(msg.Method == "tools/call" && name != msg.Params.Name) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32020, "message": "header mismatch"}})
		return
	}
	if msg.Method == "tools/call" && msg.Params.Name == adminTool {
		switch {
		case f.o.stepUp401:
			f.challenge(w, r, http.StatusUnauthorized, "error", "invalid_token")
		case f.o.stepUpNoScope:
			f.challenge(w, r, http.StatusForbidden, "error", "insufficient_scope")
		default:
			f.challenge(w, r, http.StatusForbidden, "error", "insufficient_scope", "scope", "mcp:admin")
		}
		return
	}
	if f.o.next != nil {
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		f.o.next.ServeHTTP(w, r)
		return
	}
	if f.o.echoToken {
		writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": -32603, "message": "bad token " + presented(r)}})
		return
	}
	tools := []any{}
	if f.o.huge {
		tools = append(tools, map[string]any{"name": "big", "description": strings.Repeat("x", 1<<20)})
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"tools": tools}})
}
