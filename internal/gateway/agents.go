package gateway

import (
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/session"
)

// sessionKeys is how each call's agent memory key is made, or a setting error with the
// docs to read.
func sessionKeys(cfg *config.Config) (session.KeyFactory, error) {
	keys, err := session.ParseKeyFactory(cfg.Session.KeyFrom, cfg.Session.Key)
	if err != nil {
		return nil, &settingError{msg: err.Error(), hint: "see docs/runtimes.md, memory per caller"}
	}
	return keys, nil
}
