package cli

import (
	"context"
	"errors"
	"strings"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
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
)

// Results, briefly.
func resOK(detail string) doctor.Result { return doctor.Result{Status: doctor.OK, Detail: detail} }
func resSkip(detail string) doctor.Result {
	return doctor.Result{Status: doctor.Skip, Detail: detail}
}
func resWarn(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Warn, Detail: detail, Fix: fix}
}
func resFail(detail, fix string) doctor.Result {
	return doctor.Result{Status: doctor.Fail, Detail: detail, Fix: fix}
}

// localCheck only reads this machine; netCheck talks to a server (skipped by --no-network).
func localCheck(sec, name string, run func(context.Context) doctor.Result) doctor.Check {
	return doctor.Check{Section: sec, Name: name, Run: run}
}

func netCheck(sec, name string, run func(context.Context) doctor.Result) doctor.Check {
	return doctor.Check{Section: sec, Name: name, Network: true, Run: run}
}

func fixedCheck(sec, name string, r doctor.Result) doctor.Check {
	return localCheck(sec, name, func(context.Context) doctor.Result { return r })
}

// checks lists every check the configuration calls for, section by section.
func (d *doctorRun) checks() []doctor.Check {
	var cs []doctor.Check
	for _, part := range []func() []doctor.Check{
		d.configChecks, d.agentChecks, d.sttChecks, d.ttsChecks, d.vadChecks,
		d.engineChecks, d.storeChecks, d.carrierChecks, d.publicChecks,
	} {
		cs = append(cs, part()...)
	}
	return cs
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
	cs := []doctor.Check{fixedCheck(secConfig, "files", resOK(filesDetail))}

	err := cfg.Validate(config.ValidateOptions{RequireAgent: true, RequireKeys: true})
	var ve *config.ValidationError
	switch {
	case errors.As(err, &ve):
		for _, fe := range ve.Errors {
			cs = append(cs, fixedCheck(secConfig, fe.Env, resFail(fe.Error(), fieldFix(fe))))
		}
	case err != nil:
		cs = append(cs, fixedCheck(secConfig, "settings", resFail(err.Error(), "see docs/configuration.md")))
	default:
		cs = append(cs, fixedCheck(secConfig, "settings", resOK("every setting is valid for handset serve")))
	}
	cs = append(cs, fixedCheck(secConfig, "secrets", resOK(d.secretsDetail())))
	if d.hermesEnv != "" && !d.explicitEnvFiles {
		if r, ok := d.hermesOnlyForDoctor(); ok {
			cs = append(cs, fixedCheck(secConfig, "~/.hermes/.env", r))
		}
	}
	return cs
}

// fieldFix turns a validation problem into its fix: the part of the reason after the colon
// ("is required with HANDSET_AGENT=hermes: set it, or API_SERVER_KEY, to ..."), or a
// request to change the value.
func fieldFix(fe config.FieldError) string {
	if _, after, ok := strings.Cut(fe.Reason, ": "); ok {
		return fe.Env + " (" + fe.YAML + "): " + after
	}
	where := ""
	if o := fe.Origin.String(); o != "default" {
		where = " in " + o
	}
	return "change " + fe.Env + " (" + fe.YAML + ")" + where + ": it " + fe.Reason
}

// secretsDetail says, for each secret this configuration uses, "set" or "missing" and where
// it came from; never a value.
func (d *doctorRun) secretsDetail() string {
	cfg := d.cfg
	type secret struct {
		env string
		s   config.Secret
	}
	var list []secret
	switch cfg.Agent.Runtime {
	case config.AgentHermes, config.AgentOpenClaw, config.AgentOpenAI, config.AgentWebhook:
		list = append(list, secret{"HANDSET_AGENT_KEY", cfg.Agent.Key})
	}
	if cfg.STT.Provider == config.STTDeepgram {
		list = append(list, secret{"DEEPGRAM_API_KEY", cfg.STT.Deepgram.Key})
	}
	if cfg.STT.Provider == config.STTOpenAI || cfg.TTS.Provider == config.TTSOpenAI {
		list = append(list, secret{"OPENAI_API_KEY", cfg.OpenAI.Key})
	}
	if cfg.TTS.Provider == config.TTSElevenLabs {
		list = append(list, secret{"ELEVENLABS_API_KEY", cfg.TTS.ElevenLabs.Key})
	}
	if twilioConfigured(cfg) {
		list = append(list, secret{"TWILIO_AUTH_TOKEN", cfg.Twilio.AuthToken})
	}
	if cfg.DatabaseURL.IsSet() {
		list = append(list, secret{"HANDSET_DATABASE_URL", cfg.DatabaseURL})
	}
	if len(list) == 0 {
		return "this configuration uses no keys"
	}
	parts := make([]string, len(list))
	for i, s := range list {
		parts[i] = s.env + " " + s.s.Status()
		if s.s.IsSet() {
			parts[i] += " (" + d.origin(s.env) + ")"
		}
	}
	return strings.Join(parts, ", ")
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
	return resWarn(strings.Join(from, ", ")+" come(s) from "+d.hermesEnv+", which doctor reads but handset serve does not",
		"start serve with it too: "+cmd+" (or copy the value into the project's .env)"), true
}
