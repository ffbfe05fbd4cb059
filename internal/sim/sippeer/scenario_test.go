package sippeer

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

var allScenarios = []Scenario{UACCall, UACCancel, UACReinvite, UACDTMF, UACInfoDTMF, UACRefused, UACWaitBye,
	UASAnswer, UASRing, UASDigest, UASRefuseRefer, UASAcceptRefer, "testdata/uac_refer.xml", "testdata/uac_refer_accepted.xml"}

// Every scenario renders to well-formed XML with no template text left, and every SIP
// message in it has a blank line only where its headers end.
func TestScenariosRenderToWellFormedXML(t *testing.T) {
	data := scenarioData{Audio: "/a.pcmu", PayloadType: 0, Codec: "PCMU", HoldMS: 100, Digits: []string{"1", "#"},
		DTMFPcap: "/d.pcap", DTMFMS: 500, Username: "u", Password: "p", Realm: "r", RefuseRefer: true}
	for _, s := range allScenarios {
		out, err := renderScenario(s, data)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(out, []byte("{{")) || bytes.Contains(out, []byte("<no value>")) {
			t.Errorf("%s: template text left:\n%s", s, out)
		}
		d := xml.NewDecoder(bytes.NewReader(out))
		d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil } // the scenarios are ASCII
		var messages int
		for {
			tok, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v\n%s", s, err, out)
			}
			if cdata, ok := tok.(xml.CharData); ok && strings.Contains(string(cdata), "SIP/2.0") {
				messages++
				checkHeaderBlock(t, s, strings.TrimSpace(string(cdata)))
			}
		}
		if messages == 0 {
			t.Errorf("%s: no SIP message", s)
		}
	}
}

// checkHeaderBlock fails t when a blank line cuts msg's headers short: every line before
// the first blank one must be a start line or a header (or a sipp keyword standing for one).
func checkHeaderBlock(t *testing.T, s Scenario, msg string) {
	t.Helper()
	var head []string
	for _, l := range strings.Split(msg, "\n")[1:] {
		l = strings.TrimSpace(l)
		if l == "" {
			break
		}
		if !strings.Contains(l, ":") && !strings.HasPrefix(l, "[") {
			t.Errorf("%s: %q is no header in\n%s", s, l, msg)
		}
		head = append(head, l)
	}
	if !strings.Contains(strings.Join(head, "\n"), "Content-Length:") {
		t.Errorf("%s: headers end before Content-Length in\n%s", s, msg)
	}
}

func TestUnknownScenarioIsAnError(t *testing.T) {
	if _, err := renderScenario("uac_nothing", scenarioData{}); err == nil {
		t.Error("rendered a scenario that does not exist")
	}
}
