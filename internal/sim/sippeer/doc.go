// Package sippeer starts real SIP software from Debian for tests, so a test can put a
// genuine caller, answerer, registrar or proxy in front of Handset's SIP carrier and read
// back what happened. SIP (the Session Initiation Protocol) sets up a call with a few
// text messages (INVITE, 200 OK, ACK, BYE); the audio itself travels separately as RTP
// packets to the addresses each side advertised in an SDP body. A harness written against
// our own reading of the RFCs would prove only that we agree with ourselves; these peers
// were written by others and are run as a carrier's equipment would be.
//
// Three programs, each installed by scripts/sip-peers.sh and run in the foreground on
// loopback ports, with everything it writes under a test's temporary directory:
//
//   - sipp (package sip-tester) plays a scripted scenario (RunSipp, StartSipp). The
//     scenarios embedded here place calls that stream a WAV, cancel before the answer,
//     hold and resume with re-INVITEs, send DTMF as RFC 4733 events or SIP INFO, or
//     expect to be refused 403; others answer calls, ring without answering, challenge
//     for digest credentials, or refuse a transfer (REFER). A test may bring its own
//     scenario file built from the same blocks. Sipp reports call counts and a message
//     trace; it does not record the audio it receives.
//   - baresip is a whole user agent (StartBaresip): it plays a WAV to the far end,
//     records what it hears to another, reports call, registration and DTMF events with
//     the time each arrived, and is driven through its TCP control socket.
//   - kamailio is a registrar and proxy (StartKamailio): it checks digest credentials
//     for REGISTER (and, if asked, INVITE) against passwords in its generated config, and
//     forwards INVITEs to registered users or to a fixed target such as Handset,
//     record-routing every dialog.
//
// Pointed at Handset listening on addr ("127.0.0.1:port"), a test might:
//
//   - call it: RunSipp(ctx, t, UACCall, addr, SippOptions{Audio: speech}) and read the
//     result's call counts and message trace; UACRefused proves a caller outside
//     HANDSET_SIP_ALLOW gets 403;
//   - let it call out: StartSipp(t, UASDigest, "", SippOptions{Username: u, Password:
//     p}) as the trunk, Handset dialling the sipp's Addr;
//   - hear it: StartBaresip, Dial("sip:handset@" + addr), WaitEstablished, then
//     AnswerToFirstRTP (the greeting's delay) and Recording (what the caller heard);
//   - go through a provider: StartKamailio with Target addr and Users; baresip
//     registers there and dials "sip:handset@" + Realm().
//
// Missing programs end the test through testpeer (a skip in the fast tier, a failure in
// the full tier). MalformedMessages and Exchange cover what none of the programs sends:
// broken and hostile SIP. WriteSpeechWAV and WriteToneWAV make the audio the peers play.
package sippeer
