package httpagent

import "net/http"

// IdlePerHost is how many idle connections to one runtime a Transport keeps: as many as
// turns may run at once on a node. Go's default keeps two, so with hundreds of calls (or
// bridge clients) nearly every turn opened a connection of its own, and over https paid a
// handshake for it.
const IdlePerHost = 512

// Transport is the HTTP transport for an agent runtime's connections: Go's default, with
// IdlePerHost idle connections kept per host.
func Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 2 * IdlePerHost
	t.MaxIdleConnsPerHost = IdlePerHost
	return t
}

// Client is an HTTP client on a Transport, with no overall timeout: the adapters time a
// runtime's silence themselves, and a turn that runs tools may take minutes.
func Client() *http.Client { return &http.Client{Transport: Transport()} }
