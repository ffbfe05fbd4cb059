package sip

import (
	"testing"

	"github.com/handset-voice/handset/internal/doctor"
)

func TestG722CodecListsAreChecked(t *testing.T) {
	s := trunkSettings(freeLoopbackPort(t))
	s[SettingCodecs] = "G722,PCMU,PCMA"
	expect(t, runChecks(t, s, nil), "sip codecs", doctor.OK, "G722, PCMU, PCMA")
	s[SettingCodecs] = "G722,PCMU"
	expect(t, runChecks(t, s, nil), "sip codecs", doctor.Warn, "only PCMA", "488", SettingCodecs)
}
