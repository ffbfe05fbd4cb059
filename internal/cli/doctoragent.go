package cli

import (
	"context"
	"net/http"
	"os"

	"github.com/handset-voice/handset/internal/agent/hermes"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/registry"

	_ "github.com/handset-voice/handset/internal/providers" // the catalogue doctor reads
)

// ---- agent runtime ----

// agentChecks are the chosen runtime's own checks, from the registry.
func (d *doctorRun) agentChecks() []doctor.Check {
	name := d.cfg.Agent.Runtime
	if name == "" {
		return []doctor.Check{doctor.Fixed(secAgent, "runtime", doctor.SkipResult("HANDSET_AGENT is not set (see config)"))}
	}
	a, ok := registry.Find[registry.Agent](name)
	if !ok {
		return []doctor.Check{doctor.Fixed(secAgent, "runtime", doctor.SkipResult("HANDSET_AGENT="+name+" is not a runtime (see config)"))}
	}
	if a.Checks == nil {
		return nil
	}
	return a.Checks(d.agentProbe())
}

// agentProbe is what the runtime's checks get: the settings, the client with the agent's
// TLS settings for its own address, and the command's HOME, environment and folder.
func (d *doctorRun) agentProbe() registry.Probe {
	return registry.Probe{
		Settings: d.cfg, Section: secAgent, Choice: "HANDSET_AGENT",
		HTTP: d.clientFor, Home: d.home, Demo: d.demo,
		Environ: d.env.Environ, WorkDir: d.env.WorkDir, Dotenv: readDotenv,
	}
}

// readDotenv reads a dotenv file as Handset reads its own.
func readDotenv(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	entries, err := config.ParseDotenv(path, data)
	vars := make(map[string]string, len(entries))
	for _, e := range entries {
		vars[e.Key] = e.Value
	}
	return vars, err
}

// hermesHome is what ~/.hermes says; doctor reads it to keep Hermes' key out of its report.
type hermesHome = hermes.Home

func readHermesHome(home string) hermesHome { return hermes.ReadHome(home, readDotenv) }

// The probe helpers the other sections' checks share.

// httpAnswer is what a probe got back.
type httpAnswer struct {
	status int
	body   []byte
	header http.Header
}

// get sends GET url with the headers and reads up to 1 MiB of the answer.
func (d *doctorRun) get(ctx context.Context, rawURL string, header map[string]string) (httpAnswer, error) {
	a, err := doctor.Get(ctx, d.clientFor(rawURL), rawURL, header)
	return httpAnswer{status: a.Status, body: a.Body, header: a.Header}, err
}
