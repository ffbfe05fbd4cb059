package plivosim

import (
	"context"

	"github.com/handset-voice/handset/internal/sim/simkit"
)

// Forgeries are Plivo's bad requests (filled in below).
func (v *vendor) Forgeries(handsetURL string) []simkit.Forgery { return nil }

// Replay replays a call's answer request (filled in below).
func (v *vendor) Replay(ctx context.Context, handsetURL string) error { return nil }
