package config

import "time"

// Reading settings by name: *Config is what providers read through (registry.Settings),
// so a provider names the settings it reads and never needs this package's types. A name
// not in the table reads as empty; the registry's tests hold every provider to names that
// are.

// Value is the setting's value as a user would write it, a secret revealed; "" when empty.
func (c *Config) Value(env string) string {
	s, ok := lookupSetting(settingTable(), env)
	if !ok {
		return ""
	}
	return s.text(c)
}

// Duration is a duration setting's value; zero for any other name.
func (c *Config) Duration(env string) time.Duration {
	if p, ok := c.fieldOf(env).(*time.Duration); ok {
		return *p
	}
	return 0
}

// Int is a whole-number setting's value; zero for any other name.
func (c *Config) Int(env string) int {
	if p, ok := c.fieldOf(env).(*int); ok {
		return *p
	}
	return 0
}

// Bool is a boolean setting's value; false for any other name.
func (c *Config) Bool(env string) bool {
	if p, ok := c.fieldOf(env).(*bool); ok {
		return *p
	}
	return false
}

// IsSetting reports whether env names a setting of the table.
func IsSetting(env string) bool {
	_, ok := lookupSetting(settingTable(), env)
	return ok
}

func (c *Config) fieldOf(env string) any {
	s, ok := lookupSetting(settingTable(), env)
	if !ok {
		return nil
	}
	return s.field(c)
}
