// Package faketwilio is an in-process stand-in for the parts of Twilio's REST API
// (https://api.twilio.com/2010-04-01) that Handset drives, shared by the tests and the
// tools that need a Twilio account without one. It speaks the real wire format: HTTP basic
// auth with the account SID and auth token (anything else answers 401 with Twilio's 20003
// body), `.json` resources, form-encoded updates, Twilio's paging fields (page, page_size,
// start, end, uri, first_page_uri, next_page_uri, previous_page_uri) and its JSON error
// bodies ({"code", "message", "more_info", "status"}).
//
// Resources served today:
//
//	GET  /2010-04-01/Accounts/{AccountSid}.json
//	GET  /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers.json   (PhoneNumber, PageSize, Page, PageToken)
//	GET  /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers/{PN}.json
//	POST /2010-04-01/Accounts/{AccountSid}/IncomingPhoneNumbers/{PN}.json
//	POST /2010-04-01/Accounts/{AccountSid}/Calls.json
//	GET  /2010-04-01/Accounts/{AccountSid}/Calls/{CA}.json
//	POST /2010-04-01/Accounts/{AccountSid}/Calls/{CA}.json              (Status, Url, Twiml)
//
// The Calls resource behaves like Twilio placing an outbound call into Handset: once
// created, a call rings, and the callee's Answer (busy, no-answer, failed, or a human or a
// machine that picks up) decides the rest; an answered call fetches its signed TwiML webhook
// (or runs inline Twiml), streams into the <Connect><Stream> it names at real-time pace
// through twiliocaller, records <Dial> transfers, follows REST redirects and hangups, and
// posts signed status callbacks; Server.Close ends every call still going.
//
// Every request is recorded (see Server.Requests) whatever its answer. Resources are added
// as routes on the same Server, so the Options, Request and fault controls apply to all.
//
// References: https://www.twilio.com/docs/phone-numbers/api/incomingphonenumber-resource,
// https://www.twilio.com/docs/voice/api/call-resource, https://www.twilio.com/docs/voice/twiml,
// https://www.twilio.com/docs/usage/twilios-response and https://www.twilio.com/docs/api/errors.
package faketwilio
