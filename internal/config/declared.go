package config

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"

	"github.com/handset-voice/handset/internal/registry"
)

// Settings a carrier declares in the registry (registry.Carrier.Declares) join the table
// here, so a carrier added later needs no edit of this package. Their values live in maps
// keyed by environment variable rather than in fields of Config; Load and Default fill
// them, and Value, Source and Display read them as any other setting.

// declaringCarriers are the carriers whose declared settings join the table: the registry's,
// in registration order. Tests stand their own carriers in.
var declaringCarriers = registry.All[registry.Carrier]

// carrierYAMLSection is the YAML section carriers' declared settings are under:
// carriers.<carrier name>.<key>.
const carrierYAMLSection = "carriers"

// declaredSettings are every declared carrier setting, as rows of the table. A name the
// table already has is left out: the built-in row is the setting.
func declaredSettings(builtin []Setting) []Setting {
	var out []Setting
	for _, c := range declaringCarriers() {
		for _, d := range c.Declares {
			if _, taken := lookupSetting(builtin, d.Env); taken {
				continue
			}
			if _, taken := lookupSetting(out, d.Env); taken {
				continue
			}
			out = append(out, declaredSetting(c.Name, d))
		}
	}
	return out
}

// declaredSetting is the table's row for one declared setting. A URL or enum with a
// default may not be emptied (the carrier counts on a value), as HANDSET_TWILIO_API_URL.
func declaredSetting(carrier string, d registry.CarrierSetting) Setting {
	env := d.Env
	s := Setting{Env: env, YAML: carrierYAMLSection + "." + carrier + "." + d.YAML, Default: d.Default,
		Allowed: slices.Clone(d.Allowed), Help: d.Help,
		field: func(c *Config) any { return c.declaredValue(env) }}
	switch d.Kind {
	case registry.SettingSecret:
		s.Kind = KindSecret
		s.field = func(c *Config) any { return c.declaredSecret(env) }
	case registry.SettingURL:
		s.Kind, s.Required = KindURL, d.Default != ""
	case registry.SettingEnum:
		s.Kind, s.Required = KindEnum, d.Default != ""
	default:
		s.Kind = KindString
	}
	return s
}

// CarrierSettings are the values of the settings carriers declare (registry.Carrier.Declares),
// by environment variable. Printed, logged or marshalled, it shows its secrets as Secret
// does: "[redacted]".
type CarrierSettings struct {
	values  map[string]*string
	secrets map[string]*Secret
}

// declaredMu guards every Config's CarrierSettings: providers read settings from several
// goroutines, and a Config not built by Load or Default fills its maps on first use.
var declaredMu sync.Mutex

// declaredValue is where the declared setting env keeps its value in c.
func (c *Config) declaredValue(env string) *string {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	return slot(&c.Carriers.values, env)
}

// declaredSecret is where the declared secret env keeps its value in c.
func (c *Config) declaredSecret(env string) *Secret {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	return slot(&c.Carriers.secrets, env)
}

// slot is m's entry for key, made on first use.
func slot[T any](m *map[string]*T, key string) *T {
	if *m == nil {
		*m = map[string]*T{}
	}
	p, ok := (*m)[key]
	if !ok {
		p = new(T)
		(*m)[key] = p
	}
	return p
}

// shown is every value by name, secrets redacted.
func (s CarrierSettings) shown() map[string]string {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	out := make(map[string]string, len(s.values)+len(s.secrets))
	for env, p := range s.values {
		out[env] = *p
	}
	for env, p := range s.secrets {
		out[env] = p.String()
	}
	return out
}

// Format prints the values with their secrets redacted, whatever the verb.
func (s CarrierSettings) Format(f fmt.State, _ rune) { fmt.Fprint(f, s.shown()) }

// LogValue implements slog.LogValuer with the secrets redacted.
func (s CarrierSettings) LogValue() slog.Value { return slog.AnyValue(s.shown()) }

// MarshalJSON writes the values with the secrets redacted.
func (s CarrierSettings) MarshalJSON() ([]byte, error) { return json.Marshal(s.shown()) }

// requiredTogether checks every carrier's groups of settings that are meaningless alone
// (registry.Carrier.RequireTogether): when one of a group is set, each other one missing is
// an error naming it and the one that is set.
func (c *Config) requiredTogether(add func(env, reason string)) {
	for _, carrier := range declaringCarriers() {
		for _, group := range carrier.RequireTogether {
			var set, missing []string
			for _, env := range group {
				if c.Value(env) != "" {
					set = append(set, env)
				} else {
					missing = append(missing, env)
				}
			}
			if len(set) == 0 {
				continue
			}
			for _, env := range missing {
				add(env, "is required with "+set[0]+": "+carrier.Title+" needs "+joinAnd(group)+" together")
			}
		}
	}
}

// joinAnd writes names as a sentence does: "A", "A and B", "A, B and C".
func joinAnd(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	out := names[0]
	for _, n := range names[1 : len(names)-1] {
		out += ", " + n
	}
	return out + " and " + names[len(names)-1]
}

// carrierNames are the carriers HANDSET_CARRIER may name.
func carrierNames() []string {
	var names []string
	for _, c := range declaringCarriers() {
		names = append(names, c.Name)
	}
	return names
}

// carrierChoice is why HANDSET_CARRIER cannot be used, or "": it names a carrier whose
// account settings are not set (a name that is no carrier is the enum's own error).
func (c *Config) carrierChoice() string {
	if c.Carrier == "" {
		return ""
	}
	for _, carrier := range declaringCarriers() {
		if carrier.Name != c.Carrier {
			continue
		}
		if carrier.Configured != nil && carrier.Configured(c) {
			return ""
		}
		return "names " + carrier.Title + ", which is not configured: set " + carrier.AccountSettings + ", or choose a configured carrier"
	}
	return ""
}

// Equal reports whether s and o hold the same values, an empty value and a missing one
// alike (go-cmp compares Configs through it).
func (s CarrierSettings) Equal(o CarrierSettings) bool {
	return maps.Equal(s.revealed(), o.revealed())
}

// revealed is every non-empty value by name, secrets revealed.
func (s CarrierSettings) revealed() map[string]string {
	declaredMu.Lock()
	defer declaredMu.Unlock()
	out := map[string]string{}
	for env, p := range s.values {
		if *p != "" {
			out[env] = *p
		}
	}
	for env, p := range s.secrets {
		if p.IsSet() {
			out[env] = p.Reveal()
		}
	}
	return out
}
