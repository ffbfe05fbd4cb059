package config

import (
	"encoding/json"
	"log/slog"
)

// Secret holds a credential (an API key, a token, a database URL with a password). It never
// shows its value when printed, logged or marshalled: fmt and slog see "[redacted]" (or
// "[empty]"), JSON sees the same string. Call Reveal only where the value is actually sent,
// which is in a provider's constructor options.
type Secret struct {
	value string
}

// NewSecret wraps value as a Secret.
func NewSecret(value string) Secret { return Secret{value: value} }

// Reveal returns the secret value itself. Pass it to the provider that needs it; never log it.
func (s Secret) Reveal() string { return s.value }

// IsSet reports whether the secret has a non-empty value.
func (s Secret) IsSet() bool { return s.value != "" }

// Status is "set" or "missing": what `handset doctor` shows for a secret.
func (s Secret) Status() string {
	if s.IsSet() {
		return "set"
	}
	return "missing"
}

// String implements fmt.Stringer without revealing the value.
func (s Secret) String() string {
	if s.IsSet() {
		return "[redacted]"
	}
	return "[empty]"
}

// GoString keeps %#v from printing the value.
func (s Secret) GoString() string { return "config.Secret(" + s.String() + ")" }

// LogValue implements slog.LogValuer, so a Secret redacts itself in every slog handler.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON writes the redacted form, so a Config dumped as JSON carries no secrets.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText writes the redacted form for text encoders.
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
