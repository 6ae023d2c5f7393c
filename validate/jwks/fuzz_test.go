package jwks

import (
	"testing"
)

// FuzzParseSet checks that no JWK Set crashes the parser and that every key
// it serves passed the filters.
func FuzzParseSet(f *testing.F) {
	for _, s := range []string{
		`{"keys":[]}`,
		`{"keys":[{"kty":"EC","kid":"a","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","alg":"ES256","use":"sig"}]}`,
		`{"keys":[{"kty":"RSA","kid":"r","n":"AQAB","e":"AQAB"}]}`,
		`{"keys":[{"kty":"oct","kid":"s","k":"AAAA"},{"kty":"OKP","kid":"e","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`,
		`{"keys":[{"kty":"EC","kid":"p","crv":"P-256","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0","d":"jpsQnnGQmL-YBIffH1136cLyG1eTDHYn9_Mh3xZQw2s"}]}`,
		`{"keys":[1,null,"x",[],{}]}`,
		`{"keys":null}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		set, good, _, err := parseSet(body)
		if err != nil {
			if set != nil || good != nil {
				t.Fatal("parseSet returned keys with an error")
			}
			return
		}
		if set.n == 0 || set.n != len(good) {
			t.Fatalf("set.n = %d, good = %d", set.n, len(good))
		}
		for _, pk := range good {
			k := pk.jwk
			// A key without a kid is served (RFC 7515 §4.1.4 makes kid
			// optional): it is a candidate for tokens without one.
			if !k.IsPublic() || !k.Valid() {
				t.Fatalf("served unusable key %+v", k)
			}
			if k.Use != "" && k.Use != "sig" {
				t.Fatalf("served key with use %q", k.Use)
			}
			if k.Algorithm != "" && !algFits(k.Algorithm, k.Key) {
				t.Fatalf("served key with alg %q for %T", k.Algorithm, k.Key)
			}
			if _, d := (candidate{kid: k.KeyID, use: k.Use, alg: k.Algorithm, ops: pk.ops, hasOps: pk.ops != nil, key: k.Key}).filter(); d != nil {
				t.Fatalf("served key fails its own filter: %s", d.reason)
			}
			if got := set.byKID[k.KeyID]; len(got) == 0 {
				t.Fatalf("kid %q missing from the index", k.KeyID)
			}
		}
		if len(set.all) != len(good) {
			t.Fatalf("set.all has %d keys, good %d", len(set.all), len(good))
		}
	})
}
