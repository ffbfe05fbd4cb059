package gateway

import (
	"errors"
	"net"
	"net/http"
	"strings"
	"syscall"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/netfail"
	"github.com/handset-voice/handset/internal/voice"
)

// What Handset knows about an OpenClaw gateway that does not answer as it should: each
// symptom, read from the error, with what to say and what to do. Doctor's checks, `handset
// test`, `handset agents` and serve's start-up all read failures through it, so they say
// the same thing.

// OpenClawSymptom is one failure Handset knows the fix for.
type OpenClawSymptom int

const (
	ocOther         OpenClawSymptom = iota
	ocStarting                      // the gateway said it is starting (or restarting)
	ocUnreachable                   // nothing answered at the address
	ocNoToken                       // refused, and Handset had no token to send
	ocBadToken                      // refused the token Handset sent
	ocNoAgentChosen                 // several agents, and HANDSET_AGENT_MODEL names none
	ocUnknownAgent                  // the agent HANDSET_AGENT_MODEL names is not on the gateway
	ocHTTPOff                       // the OpenAI-compatible endpoint is off (HANDSET_AGENT_TRANSPORT=http)
)

// The gateway's own words for a turn it refuses (openclaw 2026.9.6), over the WebSocket
// (INVALID_REQUEST) and the HTTP endpoint (400): the only sign of these at turn time.
const (
	ocSaysSeveralAgents = "Multiple agents are configured"
	ocSaysUnknownAgent  = "Unknown agent"
)

// DiagnoseOpenClaw reads err, from the gateway's WebSocket (connect, agents.list, a turn),
// SelectAgent, or the HTTP endpoint's turn.
func DiagnoseOpenClaw(cfg *config.Config, err error) OpenClawSymptom {
	var pe *voice.ProviderError
	isPE := errors.As(err, &pe)
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	switch {
	case err == nil:
		return ocOther
	case openclaw.IsStarting(err):
		return ocStarting
	case errors.Is(err, openclaw.ErrNoAgentChosen), strings.Contains(msg, ocSaysSeveralAgents):
		return ocNoAgentChosen
	case errors.Is(err, openclaw.ErrUnknownAgent), strings.Contains(msg, ocSaysUnknownAgent):
		return ocUnknownAgent
	case errors.Is(err, syscall.ECONNREFUSED), errors.As(err, new(*net.DNSError)):
		return ocUnreachable
	case !isPE:
		return ocOther
	case pe.Status == http.StatusServiceUnavailable: // the HTTP endpoint while the gateway's plugins load
		return ocStarting
	case pe.Kind == voice.KindAuth, pe.Status == http.StatusUnauthorized, pe.Status == http.StatusForbidden:
		if !cfg.Agent.Key.IsSet() {
			return ocNoToken
		}
		return ocBadToken
	case pe.Status == http.StatusNotFound && cfg.Agent.Transport == "http":
		return ocHTTPOff
	case pe.Op == "connect" && pe.Kind != voice.KindProtocol:
		return ocUnreachable
	}
	return ocOther
}

// Starting says the gateway is still starting: worth waiting for, not a failure.
func (s OpenClawSymptom) Starting() bool { return s == ocStarting }

// openClawTokenFix names both variables the token may come from.
const openClawTokenFix = "set " + config.OpenClawKeyVar + " (or HANDSET_AGENT_KEY) to the gateway's token (gateway.auth.token in ~/.openclaw/openclaw.json)"

// Advice is what to say about s, and what to do; ok is false for ocOther, where each
// command says its own general next step. err may be nil when the symptom was seen
// another way (doctor's GET /v1/models).
func (s OpenClawSymptom) Advice(cfg *config.Config, err error) (detail, fix string, ok bool) {
	wsURL, httpURL, _ := openclaw.GatewayURLs(cfg.AgentURL())
	why := ""
	if err != nil {
		why = ": " + err.Error()
	}
	switch s {
	case ocStarting:
		return "the gateway at " + wsURL + " is still starting" + why,
			"wait for it (calls wait for it too, each turn within HANDSET_AGENT_TURN_TIMEOUT); if it stays so, read the gateway's log (openclaw logs)", true
	case ocUnreachable:
		return "no OpenClaw gateway at " + wsURL + ": " + netfail.Describe(err),
			"start it (openclaw gateway) and check HANDSET_AGENT_URL (now " + cfg.AgentURL() + ", from " + cfg.Source("HANDSET_AGENT_URL") + ")", true
	case ocNoToken:
		return "Handset sent no token (HANDSET_AGENT_KEY and " + config.OpenClawKeyVar + " are empty) and the gateway at " + wsURL + " requires one" + why,
			openClawTokenFix, true
	case ocBadToken:
		return "the gateway at " + wsURL + " refuses the token (HANDSET_AGENT_KEY from " + cfg.Source("HANDSET_AGENT_KEY") + ")" + why,
			openClawTokenFix, true
	case ocNoAgentChosen:
		return "calls cannot reach an agent" + why,
			"set HANDSET_AGENT_MODEL=openclaw/<agent> to one of the gateway's agents (`handset agents` lists them)", true
	case ocUnknownAgent:
		return "calls cannot reach an agent" + why,
			"set HANDSET_AGENT_MODEL=openclaw/<agent> to one of the gateway's agents (now " + cfg.AgentModel() + ", from " + cfg.Source("HANDSET_AGENT_MODEL") + "; `handset agents` lists them)", true
	case ocHTTPOff:
		return "the gateway's OpenAI-compatible endpoint at " + httpURL + "/v1 is off (HTTP 404)",
			"set gateway.http.endpoints.chatCompletions.enabled: true in ~/.openclaw/openclaw.json, or use HANDSET_AGENT_TRANSPORT=ws", true
	}
	return "", "", false
}

// OpenClawFix is the fix for err, or general when Handset knows no better.
func OpenClawFix(cfg *config.Config, err error, general string) string {
	if _, fix, ok := DiagnoseOpenClaw(cfg, err).Advice(cfg, err); ok {
		return fix
	}
	return general
}
