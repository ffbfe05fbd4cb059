// Package pagetest tests web pages as a person meets them: in a real headless Chromium
// (Start), with a full-page screenshot left in test-artifacts/ for people to look at
// (Screenshot), and checked by axe-core, the accessibility checker, run inside the page
// (RunAxe, CheckAccessibility). Chromium and axe-core are peers (internal/testpeer): missing,
// they skip a test in the fast tier and fail it in the full tier. Import it only from tests.
package pagetest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/handset-voice/handset/internal/testpeer"
)

// Options says how Start opens Chromium; the zero value is a plain 1000×800 window that
// lives for two minutes.
type Options struct {
	// FakeMedia answers the page's microphone and camera requests without a prompt, from
	// fake devices, and lets audio play without a click first.
	FakeMedia bool
	// Microphone is a WAV file the fake microphone plays in a loop (FakeMedia implied).
	Microphone    string
	Width, Height int           // the window; 1000×800 when zero
	Timeout       time.Duration // how long the browser may live; 2 minutes when zero
}

// Start opens headless Chromium for t and returns the context its chromedp actions run in,
// and the function that closes it (also called when t ends). Without Chromium on PATH the
// test ends as testpeer.Missing says.
func Start(t testing.TB, opts Options) (context.Context, context.CancelFunc) {
	t.Helper()
	browserPath := testpeer.Program(t, "chromium", testpeer.Chromium)
	if opts.Width == 0 || opts.Height == 0 {
		opts.Width, opts.Height = 1000, 800
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Minute
	}
	flags := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		// Chromium's sandbox cannot start as root (CI) nor in many containers; the tests
		// load only pages they serve themselves.
		chromedp.NoSandbox,
		// /dev/shm is small in containers, and Chromium crashes when it fills.
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(opts.Width, opts.Height),
	)
	if opts.FakeMedia || opts.Microphone != "" {
		flags = append(flags,
			chromedp.Flag("use-fake-ui-for-media-stream", true),
			chromedp.Flag("use-fake-device-for-media-stream", true),
			chromedp.Flag("autoplay-policy", "no-user-gesture-required"),
		)
	}
	if opts.Microphone != "" {
		flags = append(flags, chromedp.Flag("use-file-for-fake-audio-capture", opts.Microphone))
	}
	allocCtx, stopAlloc := chromedp.NewExecAllocator(context.Background(), flags...)
	browserCtx, stopBrowser := chromedp.NewContext(allocCtx)
	ctx, stopTimeout := context.WithTimeout(browserCtx, opts.Timeout)
	stop := func() {
		stopTimeout()
		stopBrowser()
		stopAlloc()
	}
	t.Cleanup(stop)
	// Start the browser now, so a Chromium that cannot start fails here, not in the first
	// action.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start chromium (%s): %v", browserPath, err)
	}
	return ctx, stop
}

// ArtifactsEnv names the directory tests leave files for people in (screenshots); unset,
// it is test-artifacts/ at the top of the repository.
const ArtifactsEnv = "HANDSET_TEST_ARTIFACTS"

// ArtifactDir is the directory tests leave files for people in, made if need be.
func ArtifactDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv(ArtifactsEnv)
	if dir == "" {
		root, err := testpeer.ModuleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Screenshot saves the whole page ctx shows, as a PNG named name in ArtifactDir, and
// returns its path. A screenshot is for people, not a check: one that cannot be taken is
// logged and "" returned.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	path := filepath.Join(ArtifactDir(t), name)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return ""
	}
	t.Logf("screenshot saved: %s", path)
	return path
}
