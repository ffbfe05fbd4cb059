package sippeer

import (
	"bytes"
	"embed"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/handset-voice/handset/internal/audio"
)

//go:embed scenarios/*.xml scenarios/common.tmpl
var scenarioFiles embed.FS

// scenarioData fills in a scenario's {{...}} fields.
type scenarioData struct {
	Audio       string // absolute path of the WAV rtp_stream plays
	PayloadType int    // of Audio: 0 PCMU, 8 PCMA
	Codec       string // PCMU or PCMA
	HoldMS      int
	Digits      []string // one DTMF digit each
	DTMFPcap    string   // absolute path of the RFC 4733 capture play_pcap_audio sends
	DTMFMS      int      // how long the capture lasts
	Username    string
	Password    string
	Realm       string
	RefuseRefer bool // the in-call loop declines REFER
}

// sdpData is one SDP body: the call's codec, a direction and the origin's version (which
// must grow with every new offer in a dialog).
type sdpData struct {
	PayloadType int
	Codec       string
	Direction   string
	Version     string // a number, or a sipp keyword that gives one
}

// codecFor is the RTP payload type and SDP name of a G.711 format.
func codecFor(f audio.Format) (int, string, error) {
	if f.Rate == 8000 {
		switch f.Encoding {
		case audio.Mulaw:
			return 0, "PCMU", nil
		case audio.Alaw:
			return 8, "PCMA", nil
		}
	}
	return 0, "", fmt.Errorf("sipp streams 8 kHz mu-law or A-law, not %v at %d Hz", f.Encoding, f.Rate)
}

// renderScenario is scenario's XML with data filled in. An embedded scenario is found by
// name; one ending in .xml is the caller's file, which may use the shared blocks too.
func renderScenario(s Scenario, data scenarioData) ([]byte, error) {
	tmpl, err := template.New("").Funcs(template.FuncMap{
		"sdp": func(d scenarioData, direction, version string) sdpData {
			return sdpData{d.PayloadType, d.Codec, direction, version}
		},
		"add": func(a, b int) int { return a + b },
	}).ParseFS(scenarioFiles, "scenarios/common.tmpl")
	if err != nil {
		return nil, fmt.Errorf("scenario blocks: %w", err)
	}
	var text []byte
	if strings.HasSuffix(string(s), ".xml") {
		text, err = os.ReadFile(string(s))
	} else {
		text, err = scenarioFiles.ReadFile("scenarios/" + string(s) + ".xml")
	}
	if err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s, err)
	}
	if tmpl, err = tmpl.New(string(s)).Parse(string(text)); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s, err)
	}
	var out bytes.Buffer
	if err := tmpl.Execute(&out, data); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", s, err)
	}
	return out.Bytes(), nil
}

// isUAC reports whether s places calls (its name, or its file's, starts "uac").
func (s Scenario) isUAC() bool { return strings.HasPrefix(filepath.Base(string(s)), "uac") }
