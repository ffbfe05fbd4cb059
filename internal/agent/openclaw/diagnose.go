package openclaw

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/registry"
	"github.com/handset-voice/handset/internal/voice"
)

// What Handset knows about an OpenClaw gateway that does not answer as it should: each
// symptom, read from the error, with what to say and what to do. Doctor's checks, `handset
// test`, `handset agents` and start-up all read failures through it, so they say the same
// thing.

// Symptom is one failure Handset knows the fix for.
type Symptom int

// The symptoms.
const (
	SymptomOther         Symptom = iota
	SymptomStarting              // the gateway said it is starting (or restarting)
	SymptomUnreachable           // nothing answered at the address
	SymptomNoToken               // refused, and Handset had no token to send
	SymptomBadToken              // refused the token Handset sent
	SymptomNoAgentChosen         // several agents, and HANDSET_AGENT_MODEL names none
	SymptomUnknownAgent          // the agent HANDSET_AGENT_MODEL names is not on the gateway
	SymptomHTTPOff               // the OpenAI-compatible endpoint is off (HANDSET_AGENT_TRANSPORT=http)
)

// The gateway's own words for a turn it refuses (openclaw 2026.9.6), over the WebSocket
// (INVALID_REQUEST) and the HTTP endpoint (400): the only sign of these at turn time.
const (
	saysSeveralAgents = "Multiple agents are configured"
	saysUnknownAgent  = "Unknown agent"
)

// SymptomOf reads err, from the gateway's WebSocket (connect, agents.list, a turn),
// SelectAgent, or the HTTP endpoint's turn, with the settings Handset used.
func SymptomOf(s registry.Settings, err error) Symptom {
	var pe *voice.ProviderError
	isPE := errors.As(err, &pe)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case err == nil:
		return SymptomOther
	case IsStarting(err):
		return SymptomStarting
	case errors.Is(err, ErrNoAgentChosen), strings.Contains(msg, saysSeveralAgents):
		return SymptomNoAgentChosen
	case errors.Is(err, ErrUnknownAgent), strings.Contains(msg, saysUnknownAgent):
		return SymptomUnknownAgent
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, new(*net.DNSError)):
		return SymptomUnreachable
	case !isPE:
		return SymptomOther
	case pe.Status == http.StatusServiceUnavailable: // the HTTP endpoint while the gateway's plugins load
		return SymptomStarting
	case pe.Kind == voice.KindAuth, pe.Status == http.StatusUnauthorized, pe.Status == http.StatusForbidden:
		if s.Value("HANDSET_AGENT_KEY") == "" {
			return SymptomNoToken
		}
		return SymptomBadToken
	case pe.Status == http.StatusNotFound && s.Value("HANDSET_AGENT_TRANSPORT") == "http":
		return SymptomHTTPOff
	case pe.Op == "connect" && pe.Kind != voice.KindProtocol:
		return SymptomUnreachable
	}
	return SymptomOther
}

// tokenFix names both variables the token may come from.
const tokenFix = "set " + KeyVar + " (or HANDSET_AGENT_KEY) to the gateway's token (gateway.auth.token in ~/.openclaw/openclaw.json)"

// Advice is what to say about sym, and what to do; ok is false for SymptomOther, where
// each command says its own general next step. err may be nil when the symptom was seen
// another way (doctor's GET /v1/models).
func (sym Symptom) Advice(s registry.Settings, err error) (detail, fix string, ok bool) {
	wsURL, httpURL, _ := GatewayURLs(gatewayURL(s))
	why := ""
	if err != nil {
		why = ": " + err.Error()
	}
	switch sym {
	case SymptomStarting:
		return "the gateway at " + wsURL + " is still starting" + why,
			"wait for it (calls wait for it too, each turn within HANDSET_AGENT_TURN_TIMEOUT); if it stays so, read the gateway's log (openclaw logs)", true
	case SymptomUnreachable:
		return "no OpenClaw gateway at " + wsURL + ": " + netfail.Describe(err),
			"start it (openclaw gateway) and check HANDSET_AGENT_URL (now " + gatewayURL(s) + ", from " + s.Source("HANDSET_AGENT_URL") + ")", true
	case SymptomNoToken:
		return "Handset sent no token (HANDSET_AGENT_KEY and " + KeyVar + " are empty) and the gateway at " + wsURL + " requires one" + why,
			tokenFix, true
	case SymptomBadToken:
		return "the gateway at " + wsURL + " refuses the token (HANDSET_AGENT_KEY from " + s.Source("HANDSET_AGENT_KEY") + ")" + why,
			tokenFix, true
	case SymptomNoAgentChosen:
		return "calls cannot reach an agent" + why,
			"set HANDSET_AGENT_MODEL=openclaw/<agent> to one of the gateway's agents (`handset agents` lists them)", true
	case SymptomUnknownAgent:
		return "calls cannot reach an agent" + why,
			"set HANDSET_AGENT_MODEL=openclaw/<agent> to one of the gateway's agents (now " + agentModel(s) + ", from " + s.Source("HANDSET_AGENT_MODEL") + "; `handset agents` lists them)", true
	case SymptomHTTPOff:
		return "the gateway's OpenAI-compatible endpoint at " + httpURL + "/v1 is off (HTTP 404)",
			"set gateway.http.endpoints.chatCompletions.enabled: true in ~/.openclaw/openclaw.json, or use HANDSET_AGENT_TRANSPORT=ws", true
	}
	return "", "", false
}

// Fix is the fix for err, or general when Handset knows no better.
func Fix(s registry.Settings, err error, general string) string {
	if _, fix, ok := SymptomOf(s, err).Advice(s, err); ok {
		return fix
	}
	return general
}
