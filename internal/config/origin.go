package config

import "strconv"

// OriginKind names the layer a setting's value came from.
type OriginKind int

// The layers, from lowest to highest precedence.
const (
	FromDefault     OriginKind = iota // the built-in default
	FromConfigFile                    // the YAML file
	FromEnvFile                       // a dotenv file
	FromEnvironment                   // the process environment
	FromFlag                          // a command-line flag
)

// Origin says where a setting's value came from.
type Origin struct {
	Kind OriginKind
	Path string // the config or env file, as the user gave it
	Line int    // the line in Path, 1-based
	// Via names the variable that supplied the value when it is not the setting's own, as when
	// API_SERVER_KEY stands in for HANDSET_AGENT_KEY.
	Via string
}

// String renders the origin for people: "default", "config file handset.yaml:7",
// "env file .env:3", "environment" or "flag", then " via NAME" when Via is set.
func (o Origin) String() string {
	var s string
	switch o.Kind {
	case FromDefault:
		s = "default"
	case FromConfigFile:
		s = "config file " + fileLine(o.Path, o.Line)
	case FromEnvFile:
		s = "env file " + fileLine(o.Path, o.Line)
	case FromEnvironment:
		s = "environment"
	case FromFlag:
		s = "flag"
	default:
		s = "origin(" + strconv.Itoa(int(o.Kind)) + ")"
	}
	if o.Via != "" {
		s += " via " + o.Via
	}
	return s
}

func fileLine(path string, line int) string {
	if line > 0 {
		return path + ":" + strconv.Itoa(line)
	}
	return path
}
