// Package bridgeclients drives an OpenAI-compatible chat-completions endpoint with real
// third-party clients, so a test can show that Handset's agent bridge works with code
// nobody here wrote: the official openai Node SDK (chat.completions.create with and without
// stream, models.list) and the OpenAI plugin of LiveKit's Node agents framework (its LLM's
// chat stream, as a LiveKit voice agent uses it; no LiveKit server is involved).
//
// Each call runs one of the Node scripts in testdata (embedded, written to a temporary
// directory next to a node_modules link) with the pinned Node that scripts/openclaw.sh
// installs. The clients themselves come from scripts/bridge-clients.sh, which installs them
// into .cache/bridge-clients from the lockfile in testdata/npm. A script takes its Request
// as JSON on stdin and prints one JSON Result line; an error the client raised is part of
// the Result, while a script that crashes fails the test with its stderr. Neither client
// retries, so a failure is seen exactly once.
//
// Without Node or the clients a test is missing a peer (testpeer.BridgeClients): it skips,
// or fails in the full tier. Each call starts Node (the LiveKit one loads a large
// framework), so tests that use this package are slow ones. Import it only from tests; its
// functions end the test on trouble, so call them from the test's goroutine.
package bridgeclients
