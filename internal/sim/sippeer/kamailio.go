package sippeer

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/handset-voice/handset/internal/testpeer"
)

// KamailioOptions configure a kamailio registrar and proxy.
type KamailioOptions struct {
	// Dir holds its config, runtime files and log; t.TempDir() when empty.
	Dir string
	// Realm is the digest realm and the domain users register in; "handset.test" when empty.
	Realm string
	// Users are the accounts, user name to password. REGISTER from any of them must
	// carry a valid digest answer; everyone else is refused. Names and passwords are
	// letters, digits and ._- only.
	Users map[string]string
	// Target, when set ("host:port"), receives INVITEs for users that are not
	// registered: Handset's address on a trunk.
	Target string
	// AuthInvites makes every new INVITE carry a valid digest answer from one of Users
	// (a 407 challenge first), as a provider's proxy asks of outbound calls.
	AuthInvites bool
}

// defaultRealm is the realm and domain when KamailioOptions.Realm is empty.
const defaultRealm = "handset.test"

// kamailioStart bounds how long kamailio may take to answer its first OPTIONS.
const kamailioStart = 20 * time.Second

// credential is what a user name or password in the generated config may hold: it is
// written into the config's script as a string.
var credential = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// hostPort is what KamailioOptions.Target may hold: an address, no script.
var hostPort = regexp.MustCompile(`^[A-Za-z0-9.\-\[\]:]{1,255}$`)

// Kamailio is a running kamailio.
type Kamailio struct {
	proc  *process
	addr  string
	realm string
}

// StartKamailio starts kamailio in the foreground with a generated config: a registrar
// (usrloc in memory, digest checked against Users with no database) and a stateful proxy
// that record-routes, on one free loopback port for UDP and TCP. It returns once kamailio
// answers OPTIONS, and it is stopped when t ends.
func StartKamailio(t testing.TB, opts KamailioOptions) (*Kamailio, error) {
	t.Helper()
	bin := testpeer.Program(t, "kamailio", testpeer.Kamailio)
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	opts, err := opts.checked()
	if err != nil {
		return nil, err
	}
	return onFreePorts(func() (*Kamailio, error) {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		return startKamailioOn(t, bin, opts, port)
	})
}

// startKamailioOn starts kamailio listening on port for UDP and TCP.
func startKamailioOn(t testing.TB, bin string, opts KamailioOptions, port int) (*Kamailio, error) {
	var err error
	k := &Kamailio{addr: loopback(port), realm: opts.Realm}
	runtime := filepath.Join(opts.Dir, "run")
	if err := os.MkdirAll(runtime, 0o755); err != nil {
		return nil, err
	}
	cfg := filepath.Join(opts.Dir, "kamailio.cfg")
	if err := os.WriteFile(cfg, []byte(kamailioConfig(opts, port)), 0o644); err != nil {
		return nil, err
	}
	args := []string{"-DD", "-E", "-f", cfg, "-Y", runtime, "-w", opts.Dir, "-m", "32", "-M", "8"}
	if k.proc, err = startProcess(t, bin, args, opts.Dir); err != nil {
		return nil, err
	}
	t.Cleanup(func() { _ = k.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), kamailioStart)
	defer cancel()
	if err := k.waitAnswering(ctx); err != nil {
		k.proc.kill()
		return nil, portTaken(fmt.Errorf("kamailio: %w\n%s", err, k.Log()), k.Log())
	}
	return k, nil
}

// checked is o with its defaults, or an error naming what the generated config cannot
// hold.
func (o KamailioOptions) checked() (KamailioOptions, error) {
	if o.Realm == "" {
		o.Realm = defaultRealm
	}
	if !credential.MatchString(o.Realm) {
		return o, fmt.Errorf("kamailio realm %q: letters, digits and ._- only", o.Realm)
	}
	for user, password := range o.Users {
		if !credential.MatchString(user) || !credential.MatchString(password) {
			return o, fmt.Errorf("kamailio user %q: names and passwords are letters, digits and ._- only", user)
		}
	}
	if o.Target != "" {
		if _, _, err := net.SplitHostPort(o.Target); err != nil || !hostPort.MatchString(o.Target) {
			return o, fmt.Errorf("kamailio target %q: want host:port", o.Target)
		}
	}
	return o, nil
}

// waitAnswering sends OPTIONS until kamailio answers one.
func (k *Kamailio) waitAnswering(ctx context.Context) error {
	for try := 1; ; try++ {
		if k.proc.exited() {
			return fmt.Errorf("exited at start: %v", k.proc.err)
		}
		reply, err := Exchange(ctx, "udp", k.addr, optionsPing(k.addr, try), 200*time.Millisecond)
		if err == nil && strings.HasPrefix(string(reply), "SIP/2.0 200") {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("no answer to OPTIONS: %w", ctx.Err())
		}
	}
}

// optionsPing is an OPTIONS request to addr itself, the keepalive every proxy answers.
func optionsPing(addr string, n int) []byte {
	return fmt.Appendf(nil, "OPTIONS sip:%s SIP/2.0\r\n"+
		"Via: SIP/2.0/UDP 127.0.0.1:9;rport;branch=z9hG4bK-ping-%d\r\n"+
		"From: <sip:ping@127.0.0.1>;tag=ping%d\r\nTo: <sip:%s>\r\n"+
		"Call-ID: ping-%d@sippeer\r\nCSeq: %d OPTIONS\r\nMax-Forwards: 70\r\nContent-Length: 0\r\n\r\n",
		addr, n, n, addr, n, n)
}

// Addr is the "127.0.0.1:port" it listens on (UDP and TCP).
func (k *Kamailio) Addr() string { return k.addr }

// Realm is its digest realm and domain.
func (k *Kamailio) Realm() string { return k.realm }

// Log is what kamailio logged so far, for failure messages.
func (k *Kamailio) Log() string { return k.proc.out.String() }

// Stop ends kamailio (it is stopped when t ends anyway). It is killed outright: it keeps
// nothing worth a clean exit, and its TCP process outlives SIGTERM for seconds.
func (k *Kamailio) Stop() error {
	k.proc.kill()
	return nil
}

// kamailioConfig is the generated configuration: the modules, then the routing script.
func kamailioConfig(opts KamailioOptions, port int) string {
	users := slices.Sorted(func(yield func(string) bool) {
		for u := range opts.Users {
			if !yield(u) {
				return
			}
		}
	})
	var passwords strings.Builder
	for _, u := range users {
		fmt.Fprintf(&passwords, "\tif ($au == \"%s\") { $var(password) = \"%s\"; return 1; }\n", u, opts.Users[u])
	}
	target := ""
	if opts.Target != "" {
		target = "sip:" + opts.Target
	}
	r := strings.NewReplacer(
		"{{PORT}}", strconv.Itoa(port),
		"{{REALM}}", opts.Realm,
		"{{PASSWORDS}}", passwords.String(),
		"{{TARGET}}", target,
		"{{AUTH_INVITES}}", map[bool]string{true: "1", false: "0"}[opts.AuthInvites],
	)
	return r.Replace(kamailioScript)
}
