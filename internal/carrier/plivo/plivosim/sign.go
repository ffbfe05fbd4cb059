package plivosim

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math/big"
	"net/url"
	"slices"
	"strings"
)

// Signature V3, as Plivo puts it on its requests: HMAC-SHA256 keyed with the auth token,
// base64, over the URL called, the POST parameters and the nonce.
const (
	SignatureHeader = "X-Plivo-Signature-V3"
	NonceHeader     = "X-Plivo-Signature-V3-Nonce"
)

// SignV3 is the V3 signature of a POST to rawURL with form params and nonce: over the
// URL without its query, then "?" and the query's pairs sorted by key (k=v joined by &)
// when it has one, then "." and the params' key-value pairs sorted by key with nothing
// between them (only when there are params), then "." and the nonce. A key's first value
// is the one signed.
func SignV3(authToken, rawURL string, params url.Values, nonce string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return ""
	}
	signed := u.Scheme + "://" + u.Host + u.Path
	if q := u.Query(); len(q) > 0 {
		type pair struct{ k, v string }
		pairs := make([]pair, 0, len(q))
		for k, vs := range q {
			pairs = append(pairs, pair{k, vs[0]})
		}
		slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
		joined := make([]string, len(pairs))
		for i, p := range pairs {
			joined[i] = p.k + "=" + p.v
		}
		signed += "?" + strings.Join(joined, "&")
	}
	if len(params) > 0 {
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range params {
				if !yield(k) {
					return
				}
			}
		})
		signed += "."
		for _, k := range keys {
			if vs := params[k]; len(vs) > 0 {
				signed += k + vs[0]
			}
		}
	}
	signed += "." + nonce
	mac := hmac.New(sha256.New, []byte(authToken))
	mac.Write([]byte(signed))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// newNonce is a random nonce of 20 digits, as Plivo's look.
func newNonce() string {
	n, err := rand.Int(rand.Reader, new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil))
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf("%020d", n)
}

// newUUID is a random version 4 UUID, as Plivo's call and request ids are.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
