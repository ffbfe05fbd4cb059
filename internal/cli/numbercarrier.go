package cli

import (
	"flag"
	"fmt"
	"strings"

	"github.com/handset-voice/handset/internal/config"
	"github.com/handset-voice/handset/internal/registry"
)

// firstCarrier is the catalogue's first carrier: the one the number commands speak of
// before the settings are read (in their usage).
func firstCarrier() registry.Carrier {
	return registry.All[registry.Carrier]()[0]
}

// chosenCarrier is the carrier outbound calls go through and whose numbers the number
// commands manage: the one HANDSET_CARRIER (or --carrier) names, else the first the
// settings give an account, else the first begun, else the catalogue's first (whose set-up
// the messages then describe, and whose Open says what its settings lack).
func chosenCarrier(cfg *config.Config) registry.Carrier {
	if c, ok := registry.ChosenCarrier(cfg); ok {
		return c
	}
	return firstCarrier()
}

// carrierFlag adds --carrier to fs: the carrier whose account a command works on.
func carrierFlag(fs *flag.FlagSet) *string {
	return fs.String("carrier", "", "the carrier `name` whose account to use, one of "+
		strings.Join(registry.Names(registry.KindCarrier), ", ")+" (default HANDSET_CARRIER, else the one whose account is set)")
}

// carrierOverride is the settings override --carrier name makes (nil for none), or a usage
// error when name is no carrier of this binary.
func carrierOverride(name string) (map[string]string, error) {
	if name == "" {
		return nil, nil
	}
	if _, ok := registry.Find[registry.Carrier](name); !ok {
		return nil, &usageError{msg: fmt.Sprintf("--carrier %q is not a carrier: one of %s", name,
			strings.Join(registry.Names(registry.KindCarrier), ", "))}
	}
	return map[string]string{registry.CarrierChoice: name}, nil
}
