package cli

import (
	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// firstCarrier is the catalogue's first carrier: the one the number commands speak of
// before the settings are read (in their usage).
func firstCarrier() registry.Carrier {
	return registry.All[registry.Carrier]()[0]
}

// accountCarrier is the carrier whose numbers the number commands manage: the first the
// settings give an account, else the catalogue's first, whose Open then says what its
// settings lack.
func accountCarrier(cfg *config.Config) registry.Carrier {
	for _, c := range registry.All[registry.Carrier]() {
		if c.Configured(cfg) {
			return c
		}
	}
	return firstCarrier()
}
