// Command handset gives an AI agent runtime a phone number and a voice.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/handset-voice/handset/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], cli.System())
	stop()
	os.Exit(code)
}
