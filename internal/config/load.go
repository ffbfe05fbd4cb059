package config

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/handset-voice/handset/internal/registry"
)

// Default file names, looked for in LoadOptions.WorkDir.
const (
	DefaultConfigFile = "handset.yaml"
	DefaultEnvFile    = ".env"
)

// LoadOptions says where Load finds settings. The zero value reads ./handset.yaml and ./.env
// when present, with an empty environment.
type LoadOptions struct {
	// ConfigFile is the YAML file (--config). Empty means WorkDir/handset.yaml when it exists;
	// a named file that does not exist is an error.
	ConfigFile string
	// EnvFiles are dotenv files (--env-file, repeatable). Empty means WorkDir/.env when it
	// exists; named files must exist. An earlier file wins over a later one, and the
	// environment wins over every file.
	EnvFiles []string
	// WorkDir resolves relative file names; empty means the current directory.
	WorkDir string
	// Environ is the process environment in os.Environ form. Load never reads the real
	// environment itself: the caller passes os.Environ(), tests pass their own.
	Environ []string
	// Overrides are values from command-line flags, keyed by environment variable name
	// (HANDSET_LOG_LEVEL for --log-level). They win over everything.
	Overrides map[string]string
}

// envValue is one variable of the merged environment and where it came from.
type envValue struct {
	value  string
	origin Origin
}

// yamlValue is one setting's scalar from the YAML file.
type yamlValue struct {
	value string
	line  int
}

// Load assembles a Config from the layers, lowest precedence first: built-in defaults, the YAML
// file, dotenv files, the environment, then Overrides. An empty value in the environment or a
// dotenv file counts as unset. `${VAR}` in a YAML value is replaced by VAR from the environment
// and dotenv files (empty when VAR is unset; `$${` writes a literal `${`).
//
// Load returns an error for problems with the sources (see FileError). Values that do not parse
// are kept aside and reported by Validate together with every other invalid value.
func Load(opts LoadOptions) (*Config, error) {
	table := settingTable()
	src, err := readSources(opts, table)
	if err != nil {
		return nil, err
	}
	info := &loadInfo{
		origins:    make(map[string]Origin, len(table)),
		raw:        make(map[string]string, len(table)),
		configFile: src.configFile,
		envFiles:   src.envFiles,
		warnings:   append(src.warnings, unknownVariables(src.env, table)...),
	}
	c := &Config{info: info}
	for _, s := range table {
		raw, origin := s.Default, Origin{Kind: FromDefault}
		if v, ok := src.yaml[s.YAML]; ok {
			raw, origin = v.value, Origin{Kind: FromConfigFile, Path: src.configFile, Line: v.line}
		}
		if v, ok := src.env[s.Env]; ok && strings.TrimSpace(v.value) != "" {
			raw, origin = v.value, v.origin
		}
		if v, ok := opts.Overrides[s.Env]; ok {
			raw, origin = v, Origin{Kind: FromFlag}
		}
		info.origins[s.Env] = origin
		if !s.Secret() {
			info.raw[s.Env] = strings.TrimSpace(raw)
		}
		s.set(c, s.Default) // so a value that does not parse leaves the default behind
		if reason := s.set(c, raw); reason != "" {
			fe := FieldError{Env: s.Env, YAML: s.YAML, Reason: reason, Origin: origin}
			if !s.Secret() {
				fe.Value = strings.TrimSpace(raw)
			}
			info.problems = append(info.problems, fe)
		}
	}
	c.fallBackAgentKey(src.env)
	return c, nil
}

// sources is everything Load read, before it is laid over the defaults.
type sources struct {
	env        map[string]envValue  // the environment merged with the dotenv files
	yaml       map[string]yamlValue // keyed by YAML path
	warnings   []Warning            // unknown YAML keys
	configFile string
	envFiles   []string
}

// readSources reads the environment, the dotenv files and the YAML file, and checks the
// override names. It reports every problem with them at once.
func readSources(opts LoadOptions, table []Setting) (sources, error) {
	dir := opts.WorkDir
	if dir == "" {
		dir = "."
	}
	var errs []error
	src := sources{env: make(map[string]envValue, len(opts.Environ))}
	for _, kv := range opts.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			src.env[k] = envValue{value: v, origin: Origin{Kind: FromEnvironment}}
		}
	}

	envFiles, fileErrs := chooseFiles(dir, opts.EnvFiles, DefaultEnvFile)
	errs = append(errs, fileErrs...)
	for _, f := range envFiles {
		src.envFiles = append(src.envFiles, f.name)
		errs = append(errs, mergeEnvFile(src.env, f)...)
	}

	configFiles, fileErrs := chooseFiles(dir, optional(opts.ConfigFile), DefaultConfigFile)
	errs = append(errs, fileErrs...)
	for _, f := range configFiles {
		src.configFile = f.name
		data, err := os.ReadFile(f.path)
		if err != nil {
			errs = append(errs, &FileError{Path: f.name, Msg: readFailure(err)})
			continue
		}
		var yamlErrs []error
		src.yaml, src.warnings, yamlErrs = parseYAML(f.name, data, table, src.env)
		errs = append(errs, yamlErrs...)
	}

	for _, name := range slices.Sorted(maps.Keys(opts.Overrides)) {
		if _, ok := lookupSetting(table, name); !ok {
			errs = append(errs, fmt.Errorf("config: an override names %q, which is not a setting", name))
		}
	}
	return src, errors.Join(errs...)
}

// fallBackAgentKey fills an empty agent key from the variable the runtime names in the
// registry (its KeyVar). A key that is another setting's (OPENAI_API_KEY) is only borrowed
// while the agent talks to the runtime's default address, the root that key belongs to, so
// it is never sent to some other server named in HANDSET_AGENT_URL.
func (c *Config) fallBackAgentKey(env map[string]envValue) {
	if c.Agent.Key.IsSet() {
		return
	}
	a, ok := registry.Find[registry.Agent](c.Agent.Runtime)
	if !ok || a.KeyVar == "" {
		return
	}
	from := a.KeyVar
	if borrowed, ok := c.fieldOf(from).(*Secret); ok {
		if borrowed.IsSet() && a.DefaultURL != nil && c.AgentURL() == a.DefaultURL(c) {
			c.Agent.Key = *borrowed
			o := c.info.origin(from)
			o.Via = from
			c.info.origins["HANDSET_AGENT_KEY"] = o
		}
		return
	}
	if v, ok := env[from]; ok && strings.TrimSpace(v.value) != "" {
		c.Agent.Key = NewSecret(strings.TrimSpace(v.value))
		o := v.origin
		o.Via = from
		c.info.origins["HANDSET_AGENT_KEY"] = o
	}
}

func optional(name string) []string {
	if name == "" {
		return nil
	}
	return []string{name}
}

// sourceFile is a file to read: name as the user sees it, path as the program opens it.
type sourceFile struct {
	name, path string
}

// chooseFiles returns the named files, each of which must exist, or when none are named the
// default file if it exists.
func chooseFiles(dir string, named []string, def string) ([]sourceFile, []error) {
	if len(named) == 0 {
		path := filepath.Join(dir, def)
		_, err := os.Stat(path)
		switch {
		case err == nil:
			return []sourceFile{{name: path, path: path}}, nil
		case errors.Is(err, fs.ErrNotExist):
			return nil, nil
		default:
			return nil, []error{&FileError{Path: path, Msg: readFailure(err)}}
		}
	}
	var files []sourceFile
	var errs []error
	for _, f := range named {
		sf := sourceFile{name: f, path: resolve(dir, f)}
		if _, err := os.Stat(sf.path); err != nil {
			errs = append(errs, &FileError{Path: f, Msg: readFailure(err)})
			continue
		}
		files = append(files, sf)
	}
	return files, errs
}

func resolve(dir, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join(dir, name)
}

func readFailure(err error) string {
	if errors.Is(err, fs.ErrNotExist) {
		return "no such file"
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + ": " + pe.Err.Error()
	}
	return err.Error()
}

// mergeEnvFile adds the file's variables that are not set yet, so the environment and earlier
// files win. Within one file the last assignment of a name wins.
func mergeEnvFile(env map[string]envValue, f sourceFile) []error {
	data, err := os.ReadFile(f.path)
	if err != nil {
		return []error{&FileError{Path: f.name, Msg: readFailure(err)}}
	}
	entries, err := ParseDotenv(f.name, data)
	if err != nil {
		return []error{err}
	}
	last := make(map[string]DotenvEntry, len(entries))
	for _, e := range entries {
		last[e.Key] = e
	}
	for k, e := range last {
		if _, set := env[k]; !set {
			env[k] = envValue{value: e.Value, origin: Origin{Kind: FromEnvFile, Path: f.name, Line: e.Line}}
		}
	}
	return nil
}

// parseYAML reads the settings out of a YAML document, keyed by dotted YAML path. An unknown key
// is a warning naming its line, with the closest known key; a misplaced key is an error. Null
// values count as unset.
func parseYAML(name string, data []byte, table []Setting, env map[string]envValue) (map[string]yamlValue, []Warning, []error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, nil, []error{&FileError{Path: name, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil, nil // empty, or only comments
	}
	root := doc.Content[0]
	if isNull(root) {
		return nil, nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, []error{&FileError{Path: name, Line: root.Line, Msg: "the file must be a mapping of settings, like `listen: 127.0.0.1:8080`"}}
	}
	w := yamlWalker{name: name, env: env, values: map[string]yamlValue{}, settings: map[string]bool{}, sections: map[string]bool{}}
	for _, s := range table {
		w.settings[s.YAML] = true
		// An environment variable written as a key (HANDSET_STT:) leads to its YAML path.
		w.known = append(w.known, candidate{s.YAML, s.YAML}, candidate{s.Env, s.YAML})
		for i, c := range s.YAML {
			if c == '.' && !w.sections[s.YAML[:i]] {
				w.sections[s.YAML[:i]] = true
				w.known = append(w.known, candidate{s.YAML[:i], s.YAML[:i]})
			}
		}
	}
	w.walk(root, "")
	return w.values, w.warnings, w.errs
}

type yamlWalker struct {
	name     string
	env      map[string]envValue
	settings map[string]bool // every setting's YAML path
	sections map[string]bool // every path that holds settings
	known    []candidate     // what an unknown key may have meant
	values   map[string]yamlValue
	warnings []Warning
	errs     []error
}

func (w *yamlWalker) fail(line int, format string, args ...any) {
	w.errs = append(w.errs, &FileError{Path: w.name, Line: line, Msg: fmt.Sprintf(format, args...)})
}

func (w *yamlWalker) walk(m *yaml.Node, prefix string) {
	seen := map[string]int{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		for v.Kind == yaml.AliasNode && v.Alias != nil {
			v = v.Alias
		}
		if k.Kind != yaml.ScalarNode {
			w.fail(k.Line, "a key must be a plain name")
			continue
		}
		path := k.Value
		if prefix != "" {
			path = prefix + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			w.fail(k.Line, "%s is set twice (first on line %d)", path, first)
			continue
		}
		seen[k.Value] = k.Line
		switch {
		case strings.Contains(k.Value, ".") && (w.settings[path] || w.sections[path]):
			w.fail(k.Line, "unknown key %q: write dotted names nested, one level a line", path)
		case w.settings[path]:
			w.setting(path, v)
		case w.sections[path]:
			switch {
			case v.Kind == yaml.MappingNode:
				w.walk(v, path)
			case !isNull(v):
				w.fail(v.Line, "%s is a section: put its settings under it, like %s", path, w.example(path))
			}
		default:
			w.warnings = append(w.warnings, Warning{Name: path, Suggest: closest(path, w.known),
				Origin: Origin{Kind: FromConfigFile, Path: w.name, Line: k.Line}})
		}
	}
}

func (w *yamlWalker) setting(path string, v *yaml.Node) {
	switch {
	case isNull(v):
		return
	case v.Kind != yaml.ScalarNode:
		w.fail(v.Line, "%s must be a single value, not a list or a mapping", path)
		return
	}
	value, reason := expandVars(v.Value, w.env)
	if reason != "" {
		w.fail(v.Line, "%s: %s", path, reason)
		return
	}
	w.values[path] = yamlValue{value: value, line: v.Line}
}

// example names one setting under the section, for error messages.
func (w *yamlWalker) example(section string) string {
	var found []string
	for p := range w.settings {
		if strings.HasPrefix(p, section+".") {
			found = append(found, p)
		}
	}
	slices.Sort(found)
	if len(found) == 0 {
		return section
	}
	return found[0]
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// expandVars replaces ${NAME} with NAME's value from env; $${ writes a literal ${. It returns
// a reason when a reference is malformed; the message never repeats the value.
func expandVars(s string, env map[string]envValue) (string, string) {
	if !strings.Contains(s, "${") {
		return s, ""
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case strings.HasPrefix(s[i:], "$${"):
			b.WriteString("${")
			i += 3
		case strings.HasPrefix(s[i:], "${"):
			end := strings.IndexByte(s[i+2:], '}')
			if end < 0 {
				return "", "a ${ is never closed with }"
			}
			name := s[i+2 : i+2+end]
			if !validName(name) {
				return "", "a ${…} reference needs a variable name of letters, digits and underscores"
			}
			b.WriteString(env[name].value)
			i += 2 + end + 1
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String(), ""
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i], i == 0) {
			return false
		}
	}
	return true
}
