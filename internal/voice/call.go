package voice

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
)

// CallID names one call across the journal, the store and the logs.
type CallID string

// NewCallID returns a fresh random call id ("c_" and 20 hex digits).
func NewCallID() CallID {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return CallID("c_" + hex.EncodeToString(b[:]))
}

// Direction of a call as the carrier reports it.
type Direction string

// Directions.
const (
	Inbound  Direction = "inbound"
	Outbound Direction = "outbound"
)

// EndReason says why a call ended. Switches over it must be exhaustive.
type EndReason uint8

// End reasons.
const (
	EndUnknown       EndReason = iota
	EndCallerHangup            // the carrier said the caller hung up or the stream stopped
	EndAgentHangup             // the agent or a turn rule ended the call
	EndMaxDuration             // the call hit the maximum call length
	EndSilence                 // the caller stayed silent too long
	EndShutdown                // the server shut down or drained
	EndMediaError              // the media leg failed
	EndInternalError           // a bug: a panic inside the call
	EndTransferred             // the carrier moved the call to another party
	EndSTTFailed               // no recognizer could hear the caller, for HANDSET_SILENCE_HANGUP
	EndTTSFailed               // no voice could speak, not even the error message
)

var endReasonNames = [...]string{
	EndUnknown:       "unknown",
	EndCallerHangup:  "caller_hangup",
	EndAgentHangup:   "agent_hangup",
	EndMaxDuration:   "max_duration",
	EndSilence:       "silence",
	EndShutdown:      "shutdown",
	EndMediaError:    "media_error",
	EndInternalError: "internal_error",
	EndTransferred:   "transferred",
	EndSTTFailed:     "stt_failed",
	EndTTSFailed:     "tts_failed",
}

func (r EndReason) String() string {
	if int(r) < len(endReasonNames) {
		return endReasonNames[r]
	}
	return fmt.Sprintf("end_reason(%d)", uint8(r))
}
