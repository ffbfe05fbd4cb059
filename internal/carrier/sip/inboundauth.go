package sip

import (
	"errors"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/registry"
)

// readInboundAuth reads the inbound digest credentials into o: both or neither.
func readInboundAuth(s registry.Settings, o *Options) error {
	o.InboundUsername, o.InboundPassword = strings.TrimSpace(s.Value(SettingInboundUsername)), s.Value(SettingInboundPassword)
	switch {
	case o.InboundUsername != "" && o.InboundPassword == "":
		return fmt.Errorf("%s: %w", SettingInboundPassword, errors.New("is needed with "+SettingInboundUsername))
	case o.InboundUsername == "" && o.InboundPassword != "":
		return fmt.Errorf("%s: %w", SettingInboundUsername, errors.New("is needed with "+SettingInboundPassword))
	}
	return nil
}
