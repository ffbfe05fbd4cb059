package cli

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/handset-voice/handset/internal/json5"
)

// voiceAgentDeny are the tool groups OpenClaw's phone agent goes without: anyone who can
// dial the number talks to it, so no shell (exec, process, code execution), no files, no
// browser or terminal, no paired devices or computer control, and no gateway, cron or
// plugin administration.
var voiceAgentDeny = []string{"group:runtime", "group:fs", "group:ui", "group:nodes", "group:automation"}

// endpointPath is the switch of the gateway's OpenAI-compatible HTTP endpoint.
var endpointPath = []string{"gateway", "http", "endpoints", "chatCompletions", "enabled"}

// agentIDPattern is what OpenClaw keeps unchanged as an agent id (it lower-cases and
// rewrites others); setup asks for ids it will not rewrite.
var agentIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)

// maxOpenClawConfig bounds the file setup reads.
const maxOpenClawConfig = 4 << 20

// openclawConfigPath is where the gateway reads its configuration, as the gateway finds
// it: OPENCLAW_CONFIG_PATH, else openclaw.json in OPENCLAW_STATE_DIR, else
// ~/.openclaw/openclaw.json (the home being OPENCLAW_HOME when set).
func openclawConfigPath(env Env) string {
	home := environValue(env.Environ, "OPENCLAW_HOME")
	if home == "" {
		home = environValue(env.Environ, "HOME")
	}
	expand := func(p string) string {
		switch {
		case p == "~":
			return home
		case strings.HasPrefix(p, "~/"):
			return filepath.Join(home, p[2:])
		case !filepath.IsAbs(p):
			return filepath.Join(env.WorkDir, p)
		}
		return p
	}
	if p := strings.TrimSpace(environValue(env.Environ, "OPENCLAW_CONFIG_PATH")); p != "" {
		return expand(p)
	}
	if d := strings.TrimSpace(environValue(env.Environ, "OPENCLAW_STATE_DIR")); d != "" {
		return filepath.Join(expand(d), "openclaw.json")
	}
	return filepath.Join(home, ".openclaw", "openclaw.json")
}

// setupOpenClawPlan works out setup's edit of the gateway's configuration (--openclaw-config,
// else where the gateway looks): nil when there is nothing to change; a refusal is printed
// with what to do instead.
func setupOpenClawPlan(env Env, o setupOptions) (*openclawPlan, error) {
	path := o.openclawConfig
	if path == "" {
		path = openclawConfigPath(env)
	} else if !filepath.IsAbs(path) {
		path = filepath.Join(env.WorkDir, path)
	}
	plan, err := planOpenClaw(path, o.openclawAgent)
	if err != nil {
		var r *openclawRefusal
		if errors.As(err, &r) {
			fmt.Fprintf(env.Stdout, "%s\n", r.manual)
		}
		return nil, err
	}
	if len(plan.changes) == 0 {
		fmt.Fprintf(env.Stdout, "%s already has the endpoint on and agent %q without shell or file tools: nothing to change there.\n", path, o.openclawAgent)
		return nil, nil
	}
	return plan, nil
}

// openclawPlan is setup's edit of the gateway's openclaw.json, worked out before anything
// is written.
type openclawPlan struct {
	path     string
	old, new []byte
	mode     fs.FileMode
	changes  []string // what changes, one line each; none when the file has it all
}

// openclawRefusal is an edit setup will not make, with what to do by hand instead.
type openclawRefusal struct {
	path, why, manual string
}

func (r *openclawRefusal) Error() string {
	return fmt.Sprintf("%s was not changed: %s", r.path, r.why)
}

// voiceAgentEntry is the agent setup adds for phone calls.
func voiceAgentEntry(id string) json5.Obj {
	return json5.Obj{{Key: "name", Value: id}, {Key: "tools", Value: json5.Obj{{Key: "deny", Value: voiceAgentDeny}}}}
}

// openclawSnippet is what to merge into openclaw.json by hand.
func openclawSnippet(id string) string {
	d, err := json5.NewDoc([]byte("{\n  gateway: {\n  },\n  agents: {\n  },\n}\n"))
	if err == nil {
		err = errors.Join(d.Set(endpointPath, true), d.Set([]string{"agents", "entries", id}, voiceAgentEntry(id)))
	}
	if err != nil {
		return err.Error() // cannot happen: the seed is ours
	}
	return string(d.Bytes())
}

// planOpenClaw reads the gateway's configuration and works out the edit that turns on the
// OpenAI-compatible endpoint and gives phone calls agent id with no shell or file tools.
// What it cannot do safely it refuses, changing nothing, with the snippet or the command
// to use instead.
func planOpenClaw(path, id string) (*openclawPlan, error) {
	refuse := func(why, manual string) error {
		if manual == "" {
			manual = "Add this to " + path + " by hand (JSON5), merging it with what is there:\n\n" + openclawSnippet(id)
		}
		return &openclawRefusal{path: path, why: why, manual: manual}
	}
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, refuse("there is no such file", "Set up the gateway first (`openclaw onboard`), or name its configuration with --openclaw-config (or OPENCLAW_CONFIG_PATH), then run this again.")
	case err != nil:
		return nil, refuse(err.Error(), "")
	case st.Mode()&fs.ModeSymlink != 0:
		return nil, refuse("it is a symbolic link, and OpenClaw wants a regular file there (its own writes replace the link)",
			"Name the real file with --openclaw-config (or OPENCLAW_CONFIG_PATH), then run this again.")
	case !st.Mode().IsRegular():
		return nil, refuse("it is not a regular file", "")
	case st.Size() > maxOpenClawConfig:
		return nil, refuse(fmt.Sprintf("it is larger than %d MB", maxOpenClawConfig>>20), "")
	}
	old, err := os.ReadFile(path)
	if err != nil {
		return nil, refuse(err.Error(), "")
	}
	doc, err := json5.NewDoc(old)
	if err != nil {
		return nil, refuse("it cannot be read as JSON5 ("+err.Error()+")", "")
	}
	if doc.Root().Kind != json5.KindObject {
		return nil, refuse("it holds "+doc.Root().Kind.String()+", not an object", "")
	}
	if hasInclude(doc.Root()) {
		return nil, refuse("it uses $include, so what the gateway sees is spread over several files", "")
	}
	p := &openclawPlan{path: path, old: old, mode: st.Mode().Perm()}

	// The endpoint.
	n, err := doc.Find(endpointPath...)
	if err != nil {
		return nil, refuse(err.Error(), "")
	}
	if n == nil || n.Kind != json5.KindBool || !n.Bool {
		if err := doc.Set(endpointPath, true); err != nil {
			return nil, refuse(err.Error(), "")
		}
		p.changes = append(p.changes, "gateway.http.endpoints.chatCompletions.enabled: true (the OpenAI-compatible endpoint)")
	}

	// The agent.
	if legacy, err := doc.Find("agents", "list"); err != nil || legacy != nil {
		return nil, refuse("its agents are in the old agents.list",
			"Run `openclaw doctor --fix`, which moves them to agents.entries, then run this again.")
	}
	entries, err := doc.Find("agents", "entries")
	if err != nil {
		return nil, refuse(err.Error(), "")
	}
	var entry *json5.Member
	if entries != nil {
		if entries.Kind != json5.KindObject {
			return nil, refuse("agents.entries is "+entries.Kind.String()+", not an object", "")
		}
		for _, m := range entries.Members {
			if strings.ToLower(strings.TrimSpace(m.Key)) != id {
				continue
			}
			if entry != nil {
				return nil, refuse("agents.entries names "+id+" twice", "")
			}
			entry = m
		}
	}
	deny := func(key string) []string { return []string{"agents", "entries", key, "tools", "deny"} }
	switch {
	case entry == nil:
		own, err := doc.Find("agents", "ownership")
		if err != nil {
			return nil, refuse(err.Error(), "")
		}
		if own == nil || own.Kind != json5.KindString || own.Str != "explicit" {
			// A second agent changes how OpenClaw routes your channels, which it does itself.
			return nil, refuse("the gateway runs its agents without an explicit roster (agents.ownership), and a second agent changes how OpenClaw routes your channels, which OpenClaw does itself",
				fmt.Sprintf("Let OpenClaw add the agent, then run this again (it then takes the new agent's tools away and turns on the endpoint):\n\n  openclaw agents add %s --non-interactive --workspace %s\n",
					id, shellQuote(filepath.Join(filepath.Dir(path), "workspace-"+id))))
		}
		if err := doc.Set([]string{"agents", "entries", id}, voiceAgentEntry(id)); err != nil {
			return nil, refuse(err.Error(), "")
		}
		p.changes = append(p.changes, fmt.Sprintf("agents.entries.%s: a new agent for phone calls, without %s", id, strings.Join(voiceAgentDeny, ", ")))
	default:
		key := entry.Key
		if entry.Value.Kind != json5.KindObject {
			return nil, refuse("agents.entries."+key+" is "+entry.Value.Kind.String()+", not an object", "")
		}
		tools, err := doc.Find("agents", "entries", key, "tools")
		if err != nil {
			return nil, refuse(err.Error(), "")
		}
		have, err := doc.Find(deny(key)...)
		if err != nil {
			return nil, refuse(err.Error(), "")
		}
		switch {
		case tools == nil:
			err = doc.Set([]string{"agents", "entries", key, "tools"}, json5.Obj{{Key: "deny", Value: voiceAgentDeny}})
		case tools.Kind != json5.KindObject:
			return nil, refuse("agents.entries."+key+".tools is "+tools.Kind.String()+", not an object", "")
		case have == nil:
			err = doc.Set(deny(key), voiceAgentDeny)
		case have.Kind != json5.KindArray:
			return nil, refuse("agents.entries."+key+".tools.deny is "+have.Kind.String()+", not a list", "")
		}
		if err != nil {
			return nil, refuse(err.Error(), "")
		}
		var added []string
		if have != nil && have.Kind == json5.KindArray {
			for _, g := range voiceAgentDeny {
				if !denies(have, g) {
					if err := doc.Append(deny(key), g); err != nil {
						return nil, refuse(err.Error(), "")
					}
					added = append(added, g)
				}
			}
		} else {
			added = voiceAgentDeny
		}
		if len(added) > 0 {
			p.changes = append(p.changes, fmt.Sprintf("agents.entries.%s.tools.deny: the existing agent goes without %s", key, strings.Join(added, ", ")))
		}
	}
	p.new = doc.Bytes()
	return p, nil
}

// denies reports whether a deny list already holds group (or everything).
func denies(list *json5.Node, group string) bool {
	for _, e := range list.Elems {
		if e.Kind == json5.KindString && (strings.EqualFold(strings.TrimSpace(e.Str), group) || strings.TrimSpace(e.Str) == "*") {
			return true
		}
	}
	return false
}

// hasInclude reports whether any object in the document has an $include key.
func hasInclude(n *json5.Node) bool {
	for _, m := range n.Members {
		if m.Key == "$include" || hasInclude(m.Value) {
			return true
		}
	}
	return slices.ContainsFunc(n.Elems, hasInclude)
}

// preview prints what the edit would change.
func (p *openclawPlan) preview(env Env) {
	fmt.Fprintf(env.Stdout, "\nWith --yes, setup would back up %s and change it:\n", p.path)
	for _, c := range p.changes {
		fmt.Fprintf(env.Stdout, "  - %s\n", c)
	}
	fmt.Fprintf(env.Stdout, "\n%s", lineDiff(string(p.old), string(p.new)))
}

// apply backs the file up and writes the edit in its place (a rename, as OpenClaw's own
// writes do), unless the file changed since it was read.
func (p *openclawPlan) apply(env Env) error {
	cur, err := os.ReadFile(p.path)
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if !bytes.Equal(cur, p.old) {
		return fmt.Errorf("setup: %s changed while setup ran; nothing was written to it: run setup again", p.path)
	}
	backup := p.path + ".bak-" + time.Now().UTC().Format("20060102T150405Z")
	if err := writeNew(backup, p.old, 0o600); err != nil {
		return fmt.Errorf("setup: backing up %s: %w", p.path, err)
	}
	fmt.Fprintf(env.Stdout, "backed up %s to %s\n", p.path, backup)
	tmp, err := os.CreateTemp(filepath.Dir(p.path), ".openclaw.json.handset-*")
	if err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	_, err = tmp.Write(p.new)
	err = errors.Join(err, tmp.Chmod(p.mode), tmp.Sync(), tmp.Close())
	if err == nil {
		err = os.Rename(tmp.Name(), p.path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("setup: writing %s: %w (the backup is %s)", p.path, err, backup)
	}
	fmt.Fprintf(env.Stdout, "updated %s:\n", p.path)
	for _, c := range p.changes {
		fmt.Fprintf(env.Stdout, "  - %s\n", c)
	}
	fmt.Fprintln(env.Stdout, "A running gateway applies it by itself (with gateway.reload.mode off: `openclaw gateway restart`).")
	return nil
}

// writeNew writes a file that must not exist yet.
func writeNew(path string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	return errors.Join(err, f.Close())
}

// lineDiff shows what changes between two texts, line by line with two lines of
// context: "-" lines go, "+" lines come.
func lineDiff(a, b string) string {
	x, y := strings.SplitAfter(a, "\n"), strings.SplitAfter(b, "\n")
	if len(x)*len(y) > 16<<20 {
		return "(too long to compare line by line)\n"
	}
	// lcs[i][j]: the length of the longest common subsequence of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffLine
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, diffLine{' ', x[i]})
			i, j = i+1, j+1
		case j < len(y) && (i == len(x) || lcs[i][j+1] >= lcs[i+1][j]):
			ops = append(ops, diffLine{'+', y[j]})
			j++
		default:
			ops = append(ops, diffLine{'-', x[i]})
			i++
		}
	}
	shown := make([]bool, len(ops))
	for k, l := range ops {
		if l.op != ' ' {
			for c := max(k-2, 0); c <= min(k+2, len(ops)-1); c++ {
				shown[c] = true
			}
		}
	}
	var out strings.Builder
	gap := false
	for k, l := range ops {
		if !shown[k] {
			gap = true
			continue
		}
		if gap && out.Len() > 0 {
			out.WriteString("   …\n")
		}
		gap = false
		out.WriteString(" " + string(l.op) + " " + hideSecretValues(strings.TrimRight(l.text, "\r\n")) + "\n")
	}
	return out.String()
}

// secretValue is a key that names a secret (token, botToken, apiKey, password,
// clientSecret...) and the quoted string it is given.
var secretValue = regexp.MustCompile(`(?i)((?:token|key|secret|password|passwd)["']?\s*:\s*)("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')`)

// hideSecretValues hides the values of secret-looking keys in a line that setup shows.
func hideSecretValues(line string) string {
	return secretValue.ReplaceAllString(line, `$1"…"`)
}

// diffLine is one line of lineDiff: ' ' kept, '-' gone, '+' new.
type diffLine struct {
	op   byte
	text string
}
