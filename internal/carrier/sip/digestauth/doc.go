// Package digestauth checks the digest credentials (RFC 3261 22, RFC 8760) of INVITEs from
// callers that the trunk's allow-list does not name: a PBX on a changing address, or a
// softphone, proves it knows the inbound username and password instead.
//
// Digest authentication is a challenge and an answer. Handset answers an INVITE that
// carries no credentials with 401 Unauthorized and a WWW-Authenticate header holding a
// nonce; the caller sends the INVITE again with an Authorization header whose response
// is a hash of the password, the nonce and the request. The password never crosses the
// wire.
//
// A public SIP port is probed all day, so a challenge must cost no more than a refusal:
// the nonce is stateless, an HMAC over its time and the call's Call-ID under a key drawn
// at start, so nothing is stored per stranger; an Authorization captured on the wire
// names its call and goes stale after MaxAge, so it is worth nothing for another call or
// later.
package digestauth
