package plivosim

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// StreamOrder is a <Stream> element as the fake read it.
type StreamOrder struct {
	CallUUID      string
	URL           string // the element's text
	Bidirectional bool
	KeepCallAlive bool
	AudioTrack    string
	ContentType   string // audio/x-l16;rate=8000 when the document named none, Plivo's default
	StreamTimeout int
	StatusURL     string
	StatusMethod  string
	// ExtraHeaders is the attribute as given when valid, "" when dropped; Headers its
	// pairs.
	ExtraHeaders string
	Headers      map[string]string
}

// Plivo's limits and defaults for <Stream>.
const (
	DefaultContentType = "audio/x-l16;rate=8000"
	MaxExtraHeaders    = 512
)

var contentTypes = map[string]bool{"audio/x-l16;rate=8000": true, "audio/x-l16;rate=16000": true, "audio/x-mulaw;rate=8000": true}

// node is one XML element of a document.
type node struct {
	Name  string
	Attrs map[string]string
	Text  string
	Kids  []node
}

// maxDocument bounds a document the fake reads.
const maxDocument = 64 << 10

// parseDocument reads a <Response> document into its verbs.
func parseDocument(body []byte) ([]node, error) {
	if len(body) > maxDocument {
		return nil, fmt.Errorf("document is %d bytes, more than %d", len(body), maxDocument)
	}
	d := xml.NewDecoder(bytes.NewReader(body))
	var stack []*node
	var root *node
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("not XML: %w", err)
		}
		switch t := tok.(type) {
		case xml.StartElement:
			n := node{Name: t.Name.Local, Attrs: map[string]string{}}
			for _, a := range t.Attr {
				n.Attrs[a.Name.Local] = a.Value
			}
			if len(stack) == 0 {
				if root != nil {
					return nil, errors.New("more than one root element")
				}
				root = &n
				stack = append(stack, root)
				continue
			}
			parent := stack[len(stack)-1]
			parent.Kids = append(parent.Kids, n)
			stack = append(stack, &parent.Kids[len(parent.Kids)-1])
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].Text += string(t)
			}
		}
	}
	if root == nil || root.Name != "Response" {
		return nil, errors.New("the root element is not <Response>")
	}
	return root.Kids, nil
}

// readStream checks a <Stream> element as Plivo does: refused ones are an error; a bad
// extraHeaders is logged (warn) and dropped.
func readStream(n node) (o StreamOrder, warn string, err error) {
	o.URL = strings.TrimSpace(n.Text)
	if u, perr := url.Parse(o.URL); perr != nil || (u.Scheme != "wss" && u.Scheme != "ws") || u.Host == "" {
		return o, "", fmt.Errorf("<Stream> text %q is not a ws(s):// URL", o.URL)
	}
	if _, ok := n.Attrs["url"]; ok {
		return o, "", errors.New("<Stream> has a url attribute: the URL is the element's text")
	}
	for name, to := range map[string]*bool{"bidirectional": &o.Bidirectional, "keepCallAlive": &o.KeepCallAlive} {
		if v, ok := n.Attrs[name]; ok {
			b, perr := strconv.ParseBool(v)
			if perr != nil || (v != "true" && v != "false") {
				return o, "", fmt.Errorf("<Stream> %s=%q is not true or false", name, v)
			}
			*to = b
		}
	}
	o.AudioTrack = or(n.Attrs["audioTrack"], "inbound")
	switch {
	case o.AudioTrack != "inbound" && o.AudioTrack != "outbound" && o.AudioTrack != "both":
		return o, "", fmt.Errorf("<Stream> audioTrack=%q is not inbound, outbound or both", o.AudioTrack)
	case o.Bidirectional && o.AudioTrack != "inbound":
		return o, "", errors.New("<Stream> bidirectional=true needs audioTrack=inbound")
	}
	o.ContentType = or(n.Attrs["contentType"], DefaultContentType)
	if !contentTypes[o.ContentType] {
		return o, "", fmt.Errorf("<Stream> contentType=%q is not one Plivo streams", o.ContentType)
	}
	if v, ok := n.Attrs["streamTimeout"]; ok {
		t, perr := strconv.Atoi(v)
		if perr != nil || t < 1 {
			return o, "", fmt.Errorf("<Stream> streamTimeout=%q is not a positive integer", v)
		}
		o.StreamTimeout = t
	}
	o.StatusURL, o.StatusMethod = n.Attrs["statusCallbackUrl"], or(n.Attrs["statusCallbackMethod"], "POST")
	if raw, ok := n.Attrs["extraHeaders"]; ok {
		headers, herr := extraHeaders(raw)
		if herr != nil {
			return o, "<Stream> extraHeaders dropped: " + herr.Error(), nil
		}
		o.ExtraHeaders, o.Headers = raw, headers
	}
	return o, "", nil
}

// extraHeaders reads k=v,k2=v2: at most MaxExtraHeaders bytes, letters and digits only.
func extraHeaders(raw string) (map[string]string, error) {
	if len(raw) > MaxExtraHeaders {
		return nil, fmt.Errorf("%d bytes, more than %d", len(raw), MaxExtraHeaders)
	}
	out := map[string]string{}
	for _, pair := range strings.Split(raw, ",") {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || !alnum(k) || !alnum(v) {
			return nil, fmt.Errorf("%q is not key=value of letters and digits", pair)
		}
		out[k] = v
	}
	return out, nil
}

func alnum(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
