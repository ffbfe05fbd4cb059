package twiliocaller

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"net/url"
)

// StreamTwiML is what Twilio takes from a TwiML answer that connects a bidirectional
// stream: the first <Connect><Stream> and its <Parameter> children.
type StreamTwiML struct {
	URL            string            // <Stream url>, exactly as written
	Name           string            // <Stream name>, optional
	Track          string            // <Stream track>, optional
	StatusCallback string            // <Stream statusCallback>, optional
	Parameters     map[string]string // every <Parameter name value>; becomes start.customParameters
	Verbs          []string          // the top-level verbs of <Response>, in order
}

// xmlNode is any element with its attributes and child elements; text is ignored.
type xmlNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Nodes   []xmlNode  `xml:",any"`
}

func (n *xmlNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// ParseTwiML reads a TwiML document and returns its <Connect><Stream>. Other verbs and
// unknown attributes are tolerated; a document that is not <Response>, has no
// <Connect><Stream>, a stream without a url or a <Parameter> without a name is an error.
func ParseTwiML(body []byte) (StreamTwiML, error) {
	var root xmlNode
	dec := xml.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&root); err != nil {
		return StreamTwiML{}, fmt.Errorf("twiml: parse: %w", err)
	}
	if root.XMLName.Local != "Response" {
		return StreamTwiML{}, fmt.Errorf("twiml: root element is <%s>, want <Response>", root.XMLName.Local)
	}
	var tw StreamTwiML
	var stream *xmlNode
	for i := range root.Nodes {
		verb := &root.Nodes[i]
		tw.Verbs = append(tw.Verbs, verb.XMLName.Local)
		if stream != nil || verb.XMLName.Local != "Connect" {
			continue
		}
		for j := range verb.Nodes {
			if verb.Nodes[j].XMLName.Local == "Stream" {
				stream = &verb.Nodes[j]
				break
			}
		}
	}
	if stream == nil {
		return tw, fmt.Errorf("twiml: no <Connect><Stream> (verbs %v)", tw.Verbs)
	}
	tw.URL = stream.attr("url")
	tw.Name = stream.attr("name")
	tw.Track = stream.attr("track")
	tw.StatusCallback = stream.attr("statusCallback")
	if tw.URL == "" {
		return tw, errors.New("twiml: <Stream> has no url")
	}
	tw.Parameters = map[string]string{}
	for _, p := range stream.Nodes {
		if p.XMLName.Local != "Parameter" {
			continue
		}
		name := p.attr("name")
		if name == "" {
			return tw, errors.New("twiml: <Parameter> has no name")
		}
		tw.Parameters[name] = p.attr("value")
	}
	return tw, nil
}

// CheckStreamURL applies Twilio's rules to a <Stream url>: it must be absolute wss:// (ws://
// only when insecure is set, for local tests) and carry no query string, which Twilio
// refuses with error 31920.
func CheckStreamURL(raw string, insecure bool) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("stream url %q: %w", raw, err)
	}
	switch {
	case u.Scheme == "wss":
	case u.Scheme == "ws" && insecure:
	default:
		return fmt.Errorf("stream url %q: scheme must be wss", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("stream url %q: no host", raw)
	}
	if u.RawQuery != "" || u.ForceQuery {
		return fmt.Errorf("stream url %q: query strings are not supported (Twilio error 31920)", raw)
	}
	return nil
}
