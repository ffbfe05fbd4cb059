package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/handset-voice/handset/internal/sim/simkit"
)

// startVendor runs a fake of kit's vendor for the test.
func startVendor(t *testing.T, kit simkit.Kit, opts simkit.VendorOptions) simkit.Vendor {
	t.Helper()
	if opts.Secret == "" {
		opts.Secret = "test-auth-token"
	}
	v, err := kit.Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := v.Close(); err != nil {
			t.Error(err)
		}
	})
	return v
}

// startServeVendor is startServeWith with the vendor shaped by opts.
func startServeVendor(t *testing.T, kit simkit.Kit, opts simkit.VendorOptions, transcripts []string, extra ...string) *rig {
	t.Helper()
	v := startVendor(t, kit, opts)
	r := startServe(t, transcripts, append(v.Settings(""), extra...)...)
	r.kit, r.vendor = kit, v
	return r
}

// startStoppableWith is startStoppable with the carrier of kit.
func startStoppableWith(t *testing.T, kit simkit.Kit, transcripts []string, extra ...string) (*rig, func() int) {
	t.Helper()
	v := startVendor(t, kit, simkit.VendorOptions{})
	r, stop := startStoppable(t, transcripts, append(v.Settings(""), extra...)...)
	r.kit, r.vendor = kit, v
	return r, stop
}

// startServeAPI runs serve with the carrier of kit on a port known beforehand, so its
// public URL (which callbacks and outbound calls need) is its own address, and with the
// API token read: inbound calls whose effects a test reads through /api. The account's
// number is ourNumber, as in the outbound tests.
func startServeAPI(t *testing.T, kit simkit.Kit, transcripts []string, extra ...string) *outRig {
	t.Helper()
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	public := "http://" + addr
	v := startVendor(t, kit, simkit.VendorOptions{Numbers: []string{ourNumber}})
	settings := append([]string{"HANDSET_LISTEN=" + addr, "HANDSET_PUBLIC_URL=" + public}, v.Settings(public)...)
	r := startServe(t, transcripts, append(settings, extra...)...)
	r.kit, r.vendor = kit, v
	return &outRig{rig: r, token: apiToken(t, r)}
}

// apiToken is the API token serve wrote to its data directory.
func apiToken(t *testing.T, r *rig) string {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(r.dataDir, "api-token"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(token))
}
