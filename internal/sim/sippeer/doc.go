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
//   - sipp (package sip-tester) plays a scripted scenario: the XML scenarios embedded in
//     this package place calls with audio, cancel them, put them on hold, send DTMF, or
//     answer calls, with or without a digest challenge, and refuse transfers (RunSipp,
//     StartSipp).
//   - baresip is a whole user agent: it plays a WAV to the far end and records what it
//     hears to another, driven through its TCP control socket (StartBaresip).
//   - kamailio is a registrar and proxy: it checks digest credentials for REGISTER and
//     forwards INVITEs to registered users or to a fixed target such as Handset
//     (StartKamailio).
//
// Missing programs end the test through testpeer (a skip in the fast tier, a failure in
// the full tier). MalformedMessages and Exchange cover what none of the programs sends:
// hostile, broken SIP.
package sippeer
