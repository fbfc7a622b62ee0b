package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// DefaultMaxElicitationRounds is the default of
// Config.MaxElicitationRounds.
const DefaultMaxElicitationRounds = 3

// maxInputRequests bounds the elicitations of one answer the bridge
// answers itself.
const maxInputRequests = 4

// elicitedMethods are the requests a server may answer with URL
// elicitations.
func elicitedMethod(method string) bool {
	return method == "tools/call" || method == "prompts/get" || method == "resources/read"
}

// elicitsFor reports whether the bridge answers the URL elicitations of m
// itself: Config.Elicit is set, m may get them, and the host did not
// declare URL-mode elicitation (in the request's _meta for 2026-07-28, in
// its initialize request for 2025-11-25).
func (b *Bridge) elicitsFor(m *message) bool {
	if b.cfg.Elicit == nil || !m.isRequest() || !elicitedMethod(m.Method) {
		return false
	}
	var p struct {
		Meta struct {
			Version      string          `json:"io.modelcontextprotocol/protocolVersion"`
			Capabilities json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	}
	_ = decodeParams(m.Params, &p)
	if p.Meta.Version != "" {
		return !declaresURLElicitation(p.Meta.Capabilities)
	}
	b.mu.Lock()
	init := b.init
	b.mu.Unlock()
	var ip struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	if init != nil {
		_ = decodeParams(init.Params, &ip)
	}
	return !declaresURLElicitation(ip.Capabilities)
}

// declaresURLElicitation reports whether client capabilities hold
// elicitation.url.
func declaresURLElicitation(caps json.RawMessage) bool {
	var c struct {
		Elicitation *struct {
			URL json.RawMessage `json:"url"`
		} `json:"elicitation"`
	}
	return len(caps) > 0 && json.Unmarshal(caps, &c) == nil && c.Elicitation != nil &&
		len(c.Elicitation.URL) > 0 && c.Elicitation.URL[0] == '{'
}

// heldAnswer is a server answer asking for URL elicitations, kept from
// the host while the bridge asks the user.
type heldAnswer struct {
	raw   []byte          // the answer as the server sent it
	data  json.RawMessage // {"elicitations":[…]}, for Config.Elicit
	keys  []string        // inputRequests keys (2026-07-28)
	state json.RawMessage // requestState (2026-07-28), as sent
}

// elicitation reads a: for 2026-07-28 (mrtr) an InputRequiredResult, for
// 2025-11-25 the -32042 error; false for any other answer. It copies what
// it keeps (a's bytes go back to a pool).
func elicitation(a *message, mrtr bool) (*heldAnswer, bool) {
	if !mrtr {
		if a.Error == nil || !bytes.Contains(a.Error, []byte("-32042")) {
			return nil, false
		}
		var e struct {
			Code int             `json:"code"`
			Data json.RawMessage `json:"data"`
		}
		if json.Unmarshal(a.Error, &e) != nil || e.Code != codeURLElicitationRequired || len(e.Data) == 0 {
			return nil, false
		}
		return &heldAnswer{raw: bytes.Clone(a.raw), data: bytes.Clone(e.Data)}, true
	}
	if a.Result == nil || !bytes.Contains(a.Result, []byte("input_required")) {
		return nil, false
	}
	var r struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode    string `json:"mode"`
				Message string `json:"message"`
				URL     string `json:"url"`
			} `json:"params"`
		} `json:"inputRequests"`
		RequestState json.RawMessage `json:"requestState"`
	}
	if json.Unmarshal(a.Result, &r) != nil || r.ResultType != "input_required" {
		return nil, false
	}
	h := &heldAnswer{raw: bytes.Clone(a.raw), state: bytes.Clone(r.RequestState)}
	type wire struct {
		Mode          string `json:"mode"`
		Message       string `json:"message"`
		URL           string `json:"url"`
		ElicitationID string `json:"elicitationId"`
	}
	var els []wire
	for k, in := range r.InputRequests {
		if in.Method != "elicitation/create" || in.Params.Mode != "url" {
			els = nil // something only the host could answer
			break
		}
		h.keys = append(h.keys, k)
		els = append(els, wire{"url", in.Params.Message, in.Params.URL, k})
	}
	if len(els) == 0 || len(els) > maxInputRequests {
		return h, true // held, but with no data the user may be asked about
	}
	h.data, _ = json.Marshal(map[string]any{"elicitations": els})
	return h, true
}

// exchangeEliciting sends m, for a host without URL elicitation, and
// answers the server's URL elicitations itself through Config.Elicit: the
// host gets the answer to the retried request. A 2026-07-28 request is
// sent declaring URL-mode elicitation (the bridge answers it), and
// retried with inputResponses and the server's requestState, whatever the
// user answered; a 2025-11-25 request is sent again once the user
// accepted and finished, and a declined one gets the -32042 error as the
// server sent it. At most Config.MaxElicitationRounds retries.
func (b *Bridge) exchangeEliciting(ctx context.Context, m *message) error {
	mrtr := m.params().Meta.ProtocolVersion != ""
	send := m
	if mrtr {
		raw, err := editParams(m.raw, declareURLElicitation)
		if err != nil {
			return b.exchange(ctx, m, b.toHost, true)
		}
		if send, err = parseMessage(raw); err != nil {
			return b.exchange(ctx, m, b.toHost, true)
		}
	}
	for round := 0; ; round++ {
		var held *heldAnswer
		sink := func(a *message) {
			if a.answers(m.ID) {
				if h, ok := elicitation(a, mrtr); ok {
					held = h
					return
				}
			}
			b.toHost(a)
		}
		if err := b.exchange(ctx, send, sink, true); err != nil || held == nil {
			return err
		}
		if round >= b.cfg.MaxElicitationRounds || held.data == nil {
			if !mrtr {
				_ = b.out.write(held.raw)
				return nil
			}
			// The host did not ask for input requests: it gets an error.
			msg := fmt.Sprintf("the server still asks for input after %d rounds", round)
			if held.data == nil {
				msg = "the server asks for input the bridge cannot give (only URL elicitations are answered)"
			}
			return failf(CodeBadResponse, "%s", msg)
		}
		accepted, err := b.cfg.Elicit(ctx, held.data)
		if err != nil {
			return err
		}
		if !mrtr {
			if !accepted {
				_ = b.out.write(held.raw)
				return nil
			}
			continue
		}
		action := "decline"
		if accepted {
			action = "accept"
		}
		raw, err := editParams(send.raw, answerInputRequests(held.keys, action, held.state))
		if err != nil {
			return failf(CodeBadResponse, "cannot retry the request: %v", err)
		}
		if send, err = parseMessage(raw); err != nil {
			return failf(CodeBadResponse, "cannot retry the request: %v", err)
		}
	}
}

// editParams returns the message raw with its params object changed by
// edit.
func editParams(raw []byte, edit func(map[string]json.RawMessage) error) ([]byte, error) {
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(raw, &msg); err != nil {
		return nil, err
	}
	params := map[string]json.RawMessage{}
	if p := msg["params"]; len(p) > 0 {
		if err := json.Unmarshal(p, &params); err != nil {
			return nil, err
		}
	}
	if err := edit(params); err != nil {
		return nil, err
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	msg["params"] = p
	return json.Marshal(msg)
}

// declareURLElicitation adds elicitation.url to the request's
// _meta client capabilities, keeping the others.
func declareURLElicitation(params map[string]json.RawMessage) error {
	meta := map[string]json.RawMessage{}
	if m := params["_meta"]; len(m) > 0 {
		if err := json.Unmarshal(m, &meta); err != nil {
			return err
		}
	}
	const key = "io.modelcontextprotocol/clientCapabilities"
	caps := map[string]json.RawMessage{}
	if c := meta[key]; len(c) > 0 && !bytes.Equal(c, []byte("null")) {
		if err := json.Unmarshal(c, &caps); err != nil {
			return err
		}
	}
	el := map[string]json.RawMessage{}
	if e := caps["elicitation"]; len(e) > 0 && !bytes.Equal(e, []byte("null")) {
		if err := json.Unmarshal(e, &el); err != nil {
			return err
		}
	}
	el["url"] = json.RawMessage("{}")
	var err error
	if caps["elicitation"], err = json.Marshal(el); err != nil {
		return err
	}
	if meta[key], err = json.Marshal(caps); err != nil {
		return err
	}
	params["_meta"], err = json.Marshal(meta)
	return err
}

// answerInputRequests sets the retry's inputResponses (action for every
// key) and requestState (as the server sent it; none when it sent none).
func answerInputRequests(keys []string, action string, state json.RawMessage) func(map[string]json.RawMessage) error {
	return func(params map[string]json.RawMessage) error {
		resp := make(map[string]map[string]string, len(keys))
		for _, k := range keys {
			resp[k] = map[string]string{"action": action}
		}
		var err error
		if params["inputResponses"], err = json.Marshal(resp); err != nil {
			return err
		}
		delete(params, "requestState")
		if len(state) > 0 {
			params["requestState"] = state
		}
		return nil
	}
}
