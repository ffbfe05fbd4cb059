// Package register keeps Handset registered with a SIP provider or PBX, so calls to its
// number reach it without the provider knowing Handset's address in advance.
//
// A SIP user agent that is not reachable at a fixed, allow-listed address tells a
// registrar where it is: it sends REGISTER naming its address-of-record (the user it
// answers for, sip:handset@pbx.example.com) and a Contact (where that user's calls should
// go now). The registrar keeps the binding for a limited time, the expiry it grants in its
// 200 OK, which may be shorter than asked; the binding must be refreshed before it lapses
// or calls stop arriving. Registrars usually demand digest authentication: the first
// REGISTER is answered 401 (or 407 from a proxy) with a challenge, and the request is sent
// again with an answer computed from the password. A registrar that finds the asked expiry
// too short answers 423 with the shortest it accepts (Min-Expires).
//
// A Registration does all of that on its own goroutine: it registers, refreshes at 85% of
// the granted expiry, retries with a growing delay when the registrar is down or refuses,
// and removes the binding (Expires: 0) when it is stopped. Status tells doctor and the logs
// where it stands; its errors tell wrong credentials (ErrCredentials) from a registrar that
// cannot be reached (ErrUnreachable) and from other refusals (ErrRefused).
package register
