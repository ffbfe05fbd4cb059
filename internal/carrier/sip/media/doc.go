// Package media owns one SIP call's audio path: the RTP session that carries it. A SIP
// call (issue 20) agrees in its SDP offer/answer on an address, a port and a codec for each
// side; after that, audio travels as RTP packets over UDP, outside the SIP dialog. This
// package knows nothing of SIP or SDP text: the SIP carrier maps the answer onto a Config.
package media
