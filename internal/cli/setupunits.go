package cli

import (
	"encoding/xml"
	"fmt"
	"path/filepath"
	"strings"
)

// The service files' names in the project folder.
const (
	plistServe  = "handset.plist"
	plistDialer = "handset-dialer.plist"
	dialerList  = "dialer.txt"
)

// dialerEvery is how often the supervised dialer reads its list again.
const dialerEvery = 5 // minutes

// serviceFiles are the files that keep Handset running: systemd units and launchd
// property lists, and for outbound projects the dialer list with its own timer.
func serviceFiles(o setupOptions) []projectFile {
	dir := strings.Trim(o.dir, "/")
	files := []projectFile{
		{"handset.service", systemdUnit(dir), 0o644},
		{plistServe, launchdPlist(o, "", []string{"serve"}, ""), 0o644},
	}
	if o.outbound() {
		files = append(files,
			projectFile{dialerList, dialerListFile, 0o644},
			projectFile{"handset-dialer.service", dialerUnit(dir), 0o644},
			projectFile{"handset-dialer.timer", dialerTimer, 0o644},
			projectFile{plistDialer, launchdPlist(o, "dialer", []string{"call", "--list", dialerList},
				fmt.Sprintf("<key>StartInterval</key><integer>%d</integer>", dialerEvery*60)), 0o644})
	}
	return files
}

// systemdUnit runs `handset serve` in the project folder; SIGTERM drains calls first.
func systemdUnit(dir string) string {
	return fmt.Sprintf(`[Unit]
Description=Handset: a phone number and a voice for your agent
After=network-online.target
Wants=network-online.target

[Service]
# Install: copy this folder to /opt/%[1]s; from the Handset checkout run
#   sudo ./bin/handset install    (the binary to /usr/local/bin, its engine files to /usr/local/share/handset/engines)
# then
#   sudo cp handset.service /etc/systemd/system/ && sudo systemctl enable --now handset
WorkingDirectory=/opt/%[1]s
ExecStart=/usr/local/bin/handset serve
# A stop drains calls for up to HANDSET_DRAIN_TIMEOUT (30 s) before ending them.
KillSignal=SIGTERM
TimeoutStopSec=40
Restart=on-failure
RestartSec=2
%[2]s
[Install]
WantedBy=multi-user.target
`, dir, serviceSandbox)
}

// serviceSandbox is the user and confinement handset.service and handset-dialer.service
// share: the same made-up user, so both reach the same data folder.
const serviceSandbox = `# A user made for the service; handset.service and handset-dialer.service run as the same
# one, so both reach the same data folder.
DynamicUser=yes
User=handset
StateDirectory=handset
Environment=HANDSET_DATA_DIR=/var/lib/handset
NoNewPrivileges=yes
ProtectSystem=strict
ProtectHome=read-only
`

// dialerUnit queues the dialer list's numbers into the store handset.service runs its
// jobs from; a number already queued in the batch is never queued again.
func dialerUnit(dir string) string {
	return fmt.Sprintf(`[Unit]
Description=Handset dialer: queue the numbers in %[2]s for calls
After=handset.service

[Service]
# Started every %[3]d minutes by handset-dialer.timer: install both beside handset.service,
#   sudo cp handset-dialer.service handset-dialer.timer /etc/systemd/system/
#   sudo systemctl enable --now handset-dialer.timer
# handset.service places the calls (HANDSET_OUTBOUND_CONCURRENCY, HANDSET_OUTBOUND_RATE,
# HANDSET_QUIET_HOURS); this only adds the list's new numbers to its queue.
Type=oneshot
WorkingDirectory=/opt/%[1]s
ExecStart=/usr/local/bin/handset call --list %[2]s
%[4]s`, dir, dialerList, dialerEvery, serviceSandbox)
}

var dialerTimer = fmt.Sprintf(`[Unit]
Description=Queue the new numbers of Handset's dialer list every %[1]d minutes

[Timer]
OnBootSec=2min
OnUnitActiveSec=%[1]dmin
Unit=handset-dialer.service

[Install]
WantedBy=timers.target
`, dialerEvery)

var dialerListFile = fmt.Sprintf(`# Handset's dialer list: one number a line in E.164 form, optionally followed by a comma
# and that number's own first words. Lines starting with # are comments.
#
# handset-dialer.timer (systemd) or %[2]s (launchd) runs
# `+"`handset call --list %[1]s`"+` every %[3]d minutes: each number is called once (the
# batch is "dialer"), so numbers added here are called within minutes and none twice.
#
# +14155550100, Hi, it's the clinic: your appointment is tomorrow at nine.
`, dialerList, plistDialer, dialerEvery)

// launchdLabel names a launchd job of the project: handset.<folder>[.<part>].
func launchdLabel(dir, part string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.' {
			return r
		}
		return '-'
	}, filepath.Base(filepath.Clean(dir)))
	label := "handset." + strings.Trim(name, "-.")
	if part != "" {
		label += "." + part
	}
	return label
}

// launchctlLoad is the command that installs and starts a launchd job for this user.
func launchctlLoad(file, label string) string {
	dest := "~/Library/LaunchAgents/" + label + ".plist"
	return "cp " + file + " " + dest + " && launchctl bootstrap gui/$(id -u) " + dest
}

// launchdPlist runs handset with args from the project folder under launchd (macOS),
// logging beside it; extra is more of the job's keys.
func launchdPlist(o setupOptions, part string, args []string, extra string) string {
	dir := o.absDir
	esc := func(s string) string {
		var b strings.Builder
		_ = xml.EscapeText(&b, []byte(s))
		return b.String()
	}
	var prog strings.Builder
	for _, a := range append([]string{"/usr/local/bin/handset"}, args...) {
		prog.WriteString("\n    <string>" + esc(a) + "</string>")
	}
	label := launchdLabel(o.dir, part)
	log := "handset.log"
	run := "<key>RunAtLoad</key><true/>\n  <!-- restarted when it stops on an error; a stop drains calls for up to 30 s -->\n" +
		"  <key>KeepAlive</key><dict><key>SuccessfulExit</key><false/></dict>\n  <key>ExitTimeOut</key><integer>40</integer>"
	if part != "" {
		log = "handset-" + part + ".log"
		run = extra
	}
	return fmt.Sprintf(`<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!-- launchd (macOS): after handset install (the binary to /usr/local/bin), copy this file to
     ~/Library/LaunchAgents/ as the label's name and load it (README.md has the commands). -->
<plist version="1.0">
<dict>
  <key>Label</key><string>%[1]s</string>
  <key>ProgramArguments</key>
  <array>%[2]s
  </array>
  <key>WorkingDirectory</key><string>%[3]s</string>
  %[4]s
  <key>StandardOutPath</key><string>%[5]s</string>
  <key>StandardErrorPath</key><string>%[5]s</string>
</dict>
</plist>
`, esc(label), prog.String(), esc(dir), run, esc(filepath.Join(dir, log)))
}
