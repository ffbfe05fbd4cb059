package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/handset-voice/handset/internal/agent/openclaw"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/gateway"
)

// agentsReport is `handset agents --json`.
type agentsReport struct {
	Gateway string               `json:"gateway"`
	Agents  []openclaw.AgentInfo `json:"agents"`
	Chosen  string               `json:"chosen,omitempty"` // the agent calls would reach
	Named   string               `json:"named,omitempty"`  // what HANDSET_AGENT_MODEL names, if anything
	Problem string               `json:"problem,omitempty"`
	Notes   []string             `json:"notes,omitempty"`
}

// sharedAgents are ids that usually name an agent with everything enabled; a phone line
// to one of them should be a deliberate choice.
var sharedAgents = openclaw.SharedAgents

// runAgents lists the OpenClaw gateway's agents and says which one Handset would use.
func runAgents(ctx context.Context, env Env, args []string) error {
	fs, g := newFlagSet("agents", env)
	asJSON := fs.Bool("json", false, "print the roster as JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(env, g, map[string]string{"HANDSET_AGENT": config.AgentOpenClaw})
	if err != nil {
		return err
	}
	warnSettings(newLogger(env.Stderr, cfg), cfg)
	rep, err := openClawRoster(ctx, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else {
		printRoster(env, rep)
	}
	if rep.Problem != "" {
		return errReported
	}
	return nil
}

// openClawRoster asks the gateway for its agents and applies Handset's selection rule.
func openClawRoster(ctx context.Context, cfg *config.Config) (agentsReport, error) {
	wsURL, _, err := openclaw.GatewayURLs(cfg.AgentURL())
	if err != nil {
		return agentsReport{Gateway: cfg.AgentURL()}, err
	}
	rep := agentsReport{Gateway: wsURL}
	if o, _ := cfg.Origin("HANDSET_AGENT_MODEL"); o.Kind != config.FromDefault {
		rep.Named = cfg.AgentModel()
	}
	hc, err := gateway.AgentClient(cfg)
	if err != nil {
		return rep, err
	}
	client, err := openclaw.New(openclaw.Options{URL: wsURL, Token: cfg.Agent.Key.Reveal(), HTTPClient: hc})
	if err != nil {
		return rep, err
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, openclaw.StartupProbe)
	defer cancel()
	rep.Agents, err = client.ListAgents(ctx)
	if err != nil {
		if detail, fix, ok := openclaw.SymptomOf(cfg, err).Advice(cfg, err); ok {
			return rep, fmt.Errorf("%s (%s)", detail, fix)
		}
		return rep, fmt.Errorf("OpenClaw gateway at %s: %w (is it running? is %s its token?)", wsURL, err, config.OpenClawKeyVar)
	}
	rep.Chosen, err = openclaw.SelectAgent(rep.Named, rep.Agents)
	if err != nil {
		rep.Problem = err.Error()
		return rep, nil
	}
	if sharedAgents[rep.Chosen] && rep.Named == "" {
		rep.Notes = append(rep.Notes, fmt.Sprintf(
			"%q is the gateway's only agent and usually has every tool: callers reach it. Give phone callers their own agent and name it with HANDSET_AGENT_MODEL=openclaw/<agent>.", rep.Chosen))
	}
	return rep, nil
}

func printRoster(env Env, rep agentsReport) {
	fmt.Fprintf(env.Stdout, "OpenClaw gateway %s: %d agent(s)\n", rep.Gateway, len(rep.Agents))
	for _, a := range rep.Agents {
		mark := " "
		if a.ID == rep.Chosen {
			mark = "*"
		}
		fmt.Fprintf(env.Stdout, " %s %-20s %s\n", mark, a.ID, a.Name)
	}
	switch {
	case rep.Problem != "":
		fmt.Fprintf(env.Stdout, "Handset would refuse to start: %s\n", rep.Problem)
	case rep.Named != "":
		fmt.Fprintf(env.Stdout, "Handset uses %s (HANDSET_AGENT_MODEL=%s)\n", rep.Chosen, rep.Named)
	default:
		fmt.Fprintf(env.Stdout, "Handset uses %s (the gateway's only agent)\n", rep.Chosen)
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(env.Stdout, "note: %s\n", n)
	}
}
