package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/handset-voice/handset/internal/audio/vad"
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/doctor"
	"github.com/handset-voice/handset/internal/engines"
	"github.com/handset-voice/handset/internal/gateway"
)

// ---- speech to text ----

func (d *doctorRun) sttChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.STT.Provider {
	case "":
		return []doctor.Check{fixedCheck(secSTT, "provider", resSkip("HANDSET_STT is not set (see config)"))}
	case config.STTDeepgram:
		return []doctor.Check{netCheck(secSTT, "deepgram key", d.deepgramKey)}
	case config.STTOpenAI:
		return d.openAISpeechChecks(secSTT, "HANDSET_OPENAI_STT_MODEL", cfg.STT.OpenAIModel)
	case config.STTSphinx:
		return []doctor.Check{localCheck(secSTT, "sphinx", func(context.Context) doctor.Result { return d.engineReady("sphinx", "HANDSET_STT") })}
	}
	return []doctor.Check{fixedCheck(secSTT, "provider", resSkip("HANDSET_STT="+cfg.STT.Provider+" is not a provider (see config)"))}
}

func (d *doctorRun) deepgramKey(ctx context.Context) doctor.Result {
	cfg := d.cfg
	base := strings.TrimRight(cfg.STT.Deepgram.URL, "/")
	key := cfg.STT.Deepgram.Key.Reveal()
	var h map[string]string
	if key != "" {
		h = map[string]string{"Authorization": "Token " + key}
	}
	a, err := d.get(ctx, base+"/v1/projects", h)
	switch {
	case err != nil:
		return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_DEEPGRAM_URL (now from "+d.origin("HANDSET_DEEPGRAM_URL")+") and this machine's network")
	case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
		if key == "" {
			return resFail(fmt.Sprintf("%s wants a key (HTTP %d) and DEEPGRAM_API_KEY is missing", base, a.status), "set DEEPGRAM_API_KEY: create a key in the Deepgram console (API Keys)")
		}
		return resFail(fmt.Sprintf("Deepgram rejects DEEPGRAM_API_KEY (HTTP %d)", a.status),
			"create a key in the Deepgram console (API Keys) and set DEEPGRAM_API_KEY (now from "+d.origin("DEEPGRAM_API_KEY")+")")
	case a.status == http.StatusNotFound:
		return resWarn(base+" has no /v1/projects (a self-hosted server?): the key cannot be checked before a call", "run handset test: it streams speech to the recognizer")
	case a.status != http.StatusOK:
		return resFail(fmt.Sprintf("GET %s/v1/projects answered HTTP %d: %s", base, a.status, bodySnippet(a.body)), "check Deepgram's status page and HANDSET_DEEPGRAM_URL")
	}
	var p struct {
		Projects []json.RawMessage `json:"projects"`
	}
	_ = json.Unmarshal(a.body, &p)
	if key == "" {
		return resOK(base + " answers without a key")
	}
	return resOK(fmt.Sprintf("Deepgram accepts the key (%d project(s)); model %s, language %s", len(p.Projects), cfg.STT.Deepgram.Model, cfg.STT.Deepgram.Language))
}

// openAISpeechChecks check the OpenAI account (or compatible server) the speech providers
// use: the key, and that the model is listed.
func (d *doctorRun) openAISpeechChecks(sec, modelEnv, model string) []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.OpenAI.URL, "/")
	var models onceValue[httpAnswer]
	getModels := func(ctx context.Context) (httpAnswer, error) {
		return models.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			return d.get(ctx, base+"/models", bearerHeader(cfg.OpenAI.Key.Reveal()))
		})
	}
	return []doctor.Check{
		netCheck(sec, "openai key", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_OPENAI_URL (now from "+d.origin("HANDSET_OPENAI_URL")+")")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				return resFail(fmt.Sprintf("%s rejects OPENAI_API_KEY (HTTP %d)", base, a.status),
					"set OPENAI_API_KEY to a valid key (now "+cfg.OpenAI.Key.Status()+", from "+d.origin("OPENAI_API_KEY")+")")
			case a.status == http.StatusNotFound:
				return resWarn(base+" has no /models: the key cannot be checked before a call", "run handset test")
			case a.status != http.StatusOK:
				return resFail(fmt.Sprintf("GET %s/models answered HTTP %d: %s", base, a.status, bodySnippet(a.body)), "check HANDSET_OPENAI_URL")
			}
			return resOK(base + " accepts the key")
		}),
		netCheck(sec, "openai model", func(ctx context.Context) doctor.Result {
			a, err := getModels(ctx)
			if err != nil || a.status != http.StatusOK {
				return resSkip("not checked (see openai key)")
			}
			ids, ok := modelList(a.body)
			if !ok || !slices.Contains(ids, model) {
				return resWarn(fmt.Sprintf("%q is not among the models %s lists (%s)", model, base, firstFew(ids, 5)),
					"set "+modelEnv+" to one it serves, unless it takes models it does not list")
			}
			return resOK(model + " is listed")
		}),
	}
}

// ---- text to speech ----

func (d *doctorRun) ttsChecks() []doctor.Check {
	cfg := d.cfg
	switch cfg.TTS.Provider {
	case "":
		return []doctor.Check{fixedCheck(secTTS, "provider", resSkip("HANDSET_TTS is not set (see config)"))}
	case config.TTSElevenLabs:
		return d.elevenLabsChecks()
	case config.TTSOpenAI:
		return d.openAISpeechChecks(secTTS, "HANDSET_OPENAI_TTS_MODEL", cfg.TTS.OpenAI.Model)
	case config.TTSFlite, config.TTSEspeak:
		name := cfg.TTS.Provider
		return []doctor.Check{localCheck(secTTS, name, func(context.Context) doctor.Result { return d.engineReady(name, "HANDSET_TTS") })}
	}
	return []doctor.Check{fixedCheck(secTTS, "provider", resSkip("HANDSET_TTS="+cfg.TTS.Provider+" is not a provider (see config)"))}
}

func (d *doctorRun) elevenLabsChecks() []doctor.Check {
	cfg := d.cfg
	base := strings.TrimRight(cfg.TTS.ElevenLabs.URL, "/")
	voiceID := cfg.TTS.ElevenLabs.Voice
	key := cfg.TTS.ElevenLabs.Key.Reveal()
	var voiceAnswer onceValue[httpAnswer]
	get := func(ctx context.Context) (httpAnswer, error) {
		return voiceAnswer.get(ctx, func(ctx context.Context) (httpAnswer, error) {
			var h map[string]string
			if key != "" {
				h = map[string]string{"xi-api-key": key}
			}
			return d.get(ctx, base+"/v1/voices/"+url.PathEscape(voiceID), h)
		})
	}
	// ElevenLabs answers a missing voice with 404 or, in older API versions, 400 voice_not_found.
	voiceMissing := func(a httpAnswer) bool {
		return a.status == http.StatusNotFound ||
			(a.status == http.StatusBadRequest && (bytes.Contains(a.body, []byte("voice_not_found")) || bytes.Contains(a.body, []byte("voice_does_not_exist"))))
	}
	// A key scoped without voices_read is refused on this route though it can speak.
	scoped := func(a httpAnswer) bool {
		return a.status == http.StatusUnauthorized && bytes.Contains(a.body, []byte("missing_permissions"))
	}
	return []doctor.Check{
		netCheck(secTTS, "elevenlabs key", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil:
				return resFail("no answer from "+base+": "+unreachable(err), "check HANDSET_ELEVENLABS_URL (now from "+d.origin("HANDSET_ELEVENLABS_URL")+") and this machine's network")
			case scoped(a):
				return resWarn("the key may not read voices (it lacks the voices_read permission), so the voice was not checked",
					"give the key voices_read in the ElevenLabs settings, or confirm speech with handset test")
			case a.status == http.StatusUnauthorized || a.status == http.StatusForbidden:
				if key == "" {
					return resFail(fmt.Sprintf("%s wants a key (HTTP %d) and ELEVENLABS_API_KEY is missing", base, a.status), "set ELEVENLABS_API_KEY: create one in the ElevenLabs settings (API Keys)")
				}
				return resFail(fmt.Sprintf("ElevenLabs rejects ELEVENLABS_API_KEY (HTTP %d)", a.status),
					"create a key in the ElevenLabs settings (API Keys) and set ELEVENLABS_API_KEY (now from "+d.origin("ELEVENLABS_API_KEY")+")")
			case a.status == http.StatusOK || voiceMissing(a):
				return resOK("ElevenLabs accepts the key")
			}
			return resFail(fmt.Sprintf("GET %s/v1/voices/%s answered HTTP %d: %s", base, voiceID, a.status, bodySnippet(a.body)), "check HANDSET_ELEVENLABS_URL and ElevenLabs' status page")
		}),
		netCheck(secTTS, "elevenlabs voice", func(ctx context.Context) doctor.Result {
			a, err := get(ctx)
			switch {
			case err != nil || scoped(a):
				return resSkip("not checked (see elevenlabs key)")
			case voiceMissing(a):
				return resFail(fmt.Sprintf("there is no voice %q in this ElevenLabs account (HANDSET_ELEVENLABS_VOICE from %s)", voiceID, d.origin("HANDSET_ELEVENLABS_VOICE")),
					"set HANDSET_ELEVENLABS_VOICE to a voice id from My Voices in ElevenLabs (add library voices there first)")
			case a.status != http.StatusOK:
				return resSkip("not checked (see elevenlabs key)")
			}
			var v struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(a.body, &v)
			return resOK(fmt.Sprintf("voice %s (%s), model %s", voiceID, cmp.Or(v.Name, "unnamed"), cfg.TTS.ElevenLabs.Model))
		}),
	}
}

// ---- embedded engines and VAD ----

// engineReady checks the offline engine name, which setting selects.
func (d *doctorRun) engineReady(name, setting string) doctor.Result {
	for _, e := range engines.List(d.cfg) {
		if e.Name != name {
			continue
		}
		switch {
		case !e.Linked && name == "espeak":
			return resFail("espeak-ng is not installed ("+setting+"="+name+")", "apt-get install espeak-ng, or choose another "+setting)
		case !e.Linked:
			return resFail(name+" is not in this binary ("+setting+"="+name+"; built without -tags embedded)", engines.SetupHint)
		case e.Problem != "":
			return resFail(name+" is linked, but its files are missing", e.Problem)
		}
		switch name {
		case "sphinx":
			return resOK("PocketSphinx ready (model " + d.cfg.STT.Sphinx.Model + "); offline and demo quality: a cloud STT hears callers better")
		case "flite":
			return resOK("Flite ready (voices " + d.cfg.TTS.FliteVoice + " for calls, " + d.cfg.TTS.FliteWidebandVoice + " for browsers)")
		}
		return resOK(name + " ready")
	}
	return resFail("no engine named "+name, "choose another "+setting)
}

func (d *doctorRun) vadChecks() []doctor.Check {
	return []doctor.Check{localCheck(secVAD, "engine", d.vadEngine)}
}

// vadEngine checks that the configured VAD, or the best available one, loads and makes a
// detector, as serve would.
func (d *doctorRun) vadEngine(context.Context) doctor.Result {
	cfg := d.cfg
	try := func(name string) error {
		switch name {
		case config.VADSilero:
			f, err := gateway.SileroVAD(cfg)
			if err != nil {
				return err
			}
			return detectorWorks(f, nil)
		case config.VADWebRTC:
			f, closeFn, err := gateway.WebRTCVAD(cfg)
			if err != nil {
				return err
			}
			return detectorWorks(f, closeFn)
		}
		return nil
	}
	switch choice := cfg.VAD.Engine; choice {
	case config.VADEnergy:
		return resOK("energy (HANDSET_VAD): simple, and weak in noise")
	case config.VADSilero, config.VADWebRTC:
		if err := try(choice); err != nil {
			return resFail("HANDSET_VAD="+choice+" cannot load: "+err.Error(), "run ./scripts/engines.sh (or ./scripts/setup.sh), or set HANDSET_ENGINES_DIR, or choose another HANDSET_VAD")
		}
		return resOK(choice + " (HANDSET_VAD)")
	case "":
		serr := try(config.VADSilero)
		if serr == nil {
			return resOK("silero (the best available)")
		}
		werr := try(config.VADWebRTC)
		if werr == nil {
			return resOK("webrtc (silero unavailable: " + serr.Error() + ")")
		}
		return resWarn("only the energy VAD is available, and it is weak in noise (silero: "+serr.Error()+"; webrtc: "+werr.Error()+")",
			"run ./scripts/engines.sh for the WebRTC VAD (./scripts/setup.sh also builds Silero in), or set HANDSET_VAD=energy to accept it")
	}
	return resSkip("HANDSET_VAD=" + cfg.VAD.Engine + " is not an engine (see config)")
}

// detectorWorks makes one 8 kHz detector and releases everything.
func detectorWorks(newVAD func(int) (vad.Detector, error), closeFn func()) error {
	if closeFn != nil {
		defer closeFn()
	}
	det, err := newVAD(8000)
	if err != nil {
		return err
	}
	if c, ok := det.(interface{ Close() error }); ok {
		_ = c.Close()
	}
	return nil
}

func (d *doctorRun) engineChecks() []doctor.Check {
	used := map[string]string{}
	switch d.cfg.STT.Provider {
	case config.STTSphinx:
		used["sphinx"] = secSTT
	}
	switch d.cfg.TTS.Provider {
	case config.TTSFlite, config.TTSEspeak:
		used[d.cfg.TTS.Provider] = secTTS
	}
	var cs []doctor.Check
	for _, e := range engines.List(d.cfg) {
		name := e.Name + " (" + e.Role + ")"
		state := strings.TrimPrefix(e.String(), name+": ")
		var r doctor.Result
		switch {
		case e.Linked && e.Problem == "":
			r = resOK(state)
		case used[e.Name] != "":
			r = resSkip(state + " (in use: see " + used[e.Name] + ")")
		default:
			r = resSkip(state + " (not used by this configuration)")
		}
		cs = append(cs, fixedCheck(secEngines, name, r))
	}
	return cs
}
