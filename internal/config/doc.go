// Package config owns Handset's settings: one typed Config assembled from built-in defaults, a
// YAML file, dotenv files, the process environment and command-line overrides, in that order of
// increasing precedence.
//
// One table of Setting descriptors (see Settings) names every setting's environment variable,
// YAML key, kind, default and help text. The same table drives loading, validation, the
// secret-aware display that `handset doctor` prints, and docs/configuration.md.
//
// Load only reads: it fails on problems with the sources themselves (a missing --config file,
// YAML that does not parse, an unknown YAML key, a malformed dotenv line). Every problem with a
// value is reported by Validate, all of them at once, each naming the environment variable, the
// YAML key, the bad value (never for secrets) and, for choices, the allowed values.
//
// The package keeps no package-level mutable state and never reads or changes the process
// environment: the caller passes os.Environ() in LoadOptions.
package config
