package echo_test

import (
	"testing"

	"github.com/handset-voice/handset/internal/agent/agenttest"
	"github.com/handset-voice/handset/internal/agent/echo"
)

// The echo agent runs in-process and answers at once: there is no runtime to send a turn
// to, no long reply to stream over time and nothing to fail, so only the stream's own
// cases apply (the other Peer fields stay empty).
func TestConformance(t *testing.T) {
	agenttest.Run(t, func(*testing.T) agenttest.Peer { return agenttest.Peer{Agent: echo.New()} })
}
