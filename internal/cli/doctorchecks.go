package cli

import (
	"errors"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/gateway"
	"github.com/handset-voice/handset/internal/registry"
)

// Sections of doctor's report, in the order they print.
const (
	secConfig  = "config"
	secAgent   = "agent"
	secSTT     = "stt"
	secTTS     = "tts"
	secVAD     = "vad"
	secEngines = "engines"
	secStore   = "store"
	secCarrier = "carrier"
	secPublic  = "public_url"
	secBrowser = "browser" // doctor --demo: where the demo's page is served
)

// checks lists every check the configuration calls for, section by section.
func (d *doctorRun) checks() []doctor.Check {
	var cs []doctor.Check
	for _, part := range []func() []doctor.Check{
		d.configChecks, d.agentChecks, d.agentTLSChecks, d.sttChecks, d.ttsChecks, d.vadChecks,
		d.engineChecks, d.storeChecks, d.callerChecks, d.publicURLChecks, d.tracingChecks,
	} {
		cs = append(cs, part()...)
	}
	return cs
}

// callerChecks are the carrier's checks, or, when neither a carrier nor the browser page can
// bring a call, the warning serve also logs at start.
func (d *doctorRun) callerChecks() []doctor.Check {
	if msg, fix, ok := gateway.NoCallers(d.cfg); ok {
		return []doctor.Check{doctor.Fixed(secCarrier, "calls", doctor.WarnResult(msg, fix))}
	}
	return d.carrierChecks()
}

// publicURLChecks are the public URL's checks; an unset one is only noted when nothing can
// call at all, where "browser calls only" would not be true.
func (d *doctorRun) publicURLChecks() []doctor.Check {
	if _, _, ok := gateway.NoCallers(d.cfg); ok && d.cfg.PublicURL == "" {
		return []doctor.Check{doctor.Fixed(secPublic, "address", doctor.SkipResult("not set: no carrier needs it (see carrier)"))}
	}
	return d.publicChecks()
}

// serveOptions is what `handset serve` requires of the settings; doctor checks the same.
var serveOptions = config.ValidateOptions{RequireAgent: true, RequireSpeech: true, RequireKeys: true}

// nothingForServe reports whether none of the settings serve cannot do without is set: the
// state right after `handset demo`, which needs none of them.
func nothingForServe(cfg *config.Config) bool {
	return cfg.Agent.Runtime == "" && cfg.STT.Provider == "" && cfg.TTS.Provider == ""
}

// origin says where a setting came from, for details: "environment", "env file .env:3".
func (d *doctorRun) origin(env string) string { return d.cfg.Source(env) }

// ---- configuration ----

func (d *doctorRun) configChecks() []doctor.Check {
	cfg := d.cfg
	var files []string
	if f := cfg.ConfigFile(); f != "" {
		files = append(files, "config file "+f)
	}
	if ef := cfg.EnvFiles(); len(ef) > 0 {
		files = append(files, "env files "+strings.Join(ef, ", "))
	}
	filesDetail := "no config file or .env: settings come from the environment and defaults"
	if len(files) > 0 {
		filesDetail = strings.Join(files, "; ")
	}
	cs := []doctor.Check{doctor.Fixed(secConfig, "files", doctor.OKResult(filesDetail))}
	for _, w := range cfg.Warnings() {
		cs = append(cs, doctor.Fixed(secConfig, w.Name, unknownName(w)))
	}

	opts, valid := serveOptions, "every setting is valid for handset serve"
	if d.demo {
		opts, valid = config.ValidateOptions{RequireAgent: true, RequireKeys: true}, "every setting the demo uses is valid"
	} else if nothingForServe(cfg) {
		cs = append(cs, doctor.Fixed(secConfig, "handset serve", doctor.WarnResult(
			"nothing is set up for handset serve, which is what doctor checks: HANDSET_AGENT, HANDSET_STT and HANDSET_TTS are empty. handset demo needs none of these settings",
			"to check the demo's set-up instead, run handset doctor --demo; to set up serve, run handset setup, or set the three (docs/configuration.md)")))
	}
	err := cfg.Validate(opts)
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			cs = append(cs, doctor.Fixed(secConfig, fe.Env, fieldResult(fe)))
		}
	case err != nil:
		cs = append(cs, doctor.Fixed(secConfig, "settings", doctor.FailResult(err.Error(), "see docs/configuration.md")))
	default:
		cs = append(cs, doctor.Fixed(secConfig, "settings", doctor.OKResult(valid)))
	}
	cs = append(cs, doctor.Fixed(secConfig, "secrets", d.secrets()))
	if d.hermesEnv != "" && !d.explicitEnvFiles {
		if r, ok := d.hermesOnlyForDoctor(); ok {
			cs = append(cs, doctor.Fixed(secConfig, "~/.hermes/.env", r))
		}
	}
	return cs
}

// fieldResult turns a validation problem into a failed check, named by the setting, that
// says each thing once: the detail what is wrong, the fix what to do. A reason carries its
// fix after a colon ("is required: set it to ..."), which moves to the fix rather than being
// printed twice.
func fieldResult(fe config.FieldError) doctor.Result {
	name := fe.Env + " (" + fe.YAML + ")"
	fix := ""
	if problem, remedy, ok := strings.Cut(fe.Reason, ": "); ok {
		fe.Reason, fix = problem, name+": "+remedy
	} else {
		where := ""
		if o := fe.Origin.String(); o != "default" {
			where = " in " + o
		}
		fix = "change " + name + where + ": docs/configuration.md lists the values it takes"
		if fe.Suggest != "" {
			fix = "set " + name + where + " to " + fe.Suggest
		}
	}
	// The check's name is the setting: the detail does not repeat it.
	return doctor.FailResult(strings.TrimPrefix(fe.Error(), name+": "), fix)
}

// unknownName is the warning for a name that is not a setting, as serve logs it at start.
func unknownName(w config.Warning) doctor.Result {
	fix := "remove it, or correct it: docs/configuration.md lists every setting"
	if w.Suggest != "" {
		fix = "rename it " + w.Suggest
	}
	// The check's name is the unknown name: the detail does not repeat it.
	return doctor.WarnResult("is not a Handset setting, so it is ignored (from "+w.Origin.String()+")", fix)
}

// secrets lists the secrets this configuration uses; a missing one is a warning (the
// setting's own check fails it too), never a check mark.
func (d *doctorRun) secrets() doctor.Result {
	detail, missing := d.secretsDetail()
	if missing {
		return doctor.WarnResult(detail, "fill in the secrets marked missing (in .env, or the environment of handset serve)")
	}
	return doctor.OKResult(detail)
}

// secretsDetail says, for each secret this configuration uses, "set" or "missing" and where
// it came from, never a value, and whether any is missing. The secrets are the keys of the
// providers the settings choose (each provider names its own) and the database's URL.
func (d *doctorRun) secretsDetail() (string, bool) {
	cfg := d.cfg
	var list []string
	add := func(a registry.About, ok bool) {
		if ok && a.Hints.KeyVar != "" && !slices.Contains(list, a.Hints.KeyVar) {
			list = append(list, a.Hints.KeyVar)
		}
	}
	agent, ok := registry.Find[registry.Agent](cfg.Agent.Runtime)
	add(agent.Info(), ok)
	stt, ok := registry.Find[registry.STT](cfg.STT.Provider)
	add(stt.Info(), ok)
	tts, ok := registry.Find[registry.TTS](cfg.TTS.Provider)
	add(tts.Info(), ok)
	for _, c := range registry.All[registry.Carrier]() {
		add(c.Info(), c.Started(cfg))
	}
	if cfg.DatabaseURL.IsSet() {
		list = append(list, "HANDSET_DATABASE_URL")
	}
	if len(list) == 0 {
		return "this configuration uses no keys", false
	}
	parts := make([]string, len(list))
	missing := false
	for i, env := range list {
		if cfg.Value(env) != "" {
			parts[i] = env + " set (" + d.origin(env) + ")"
		} else {
			parts[i], missing = env+" missing", true
		}
	}
	return strings.Join(parts, ", "), missing
}

// hermesOnlyForDoctor warns about settings only ~/.hermes/.env supplies: doctor reads that
// file, `handset serve` does not.
func (d *doctorRun) hermesOnlyForDoctor() (doctor.Result, bool) {
	var from []string
	for _, s := range config.Settings() {
		o, _ := d.cfg.Origin(s.Env)
		if o.Kind == config.FromEnvFile && o.Path == d.hermesEnv {
			name := s.Env
			if o.Via != "" {
				name += " (via " + o.Via + ")"
			}
			from = append(from, name)
		}
	}
	if len(from) == 0 {
		return doctor.Result{}, false
	}
	cmd := "handset serve"
	for _, f := range d.cfg.EnvFiles() { // the project's .env first, so it keeps winning
		cmd += " --env-file " + f
	}
	return doctor.WarnResult(strings.Join(from, ", ")+" come(s) from "+d.hermesEnv+", which doctor reads but handset serve does not",
		"start serve with it too: "+cmd+" (or copy the value into the project's .env)"), true
}
