package jwks

import (
	"errors"
	"testing"
)

// TestParseSetStrictJSON: the JWK Set is read with internal/strictjson, so
// repeated names, case variants of the members read and invalid UTF-8 are
// refused rather than read in one parser's way.
func TestParseSetStrictJSON(t *testing.T) {
	const key = `{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"a"}`
	for _, tt := range []struct {
		name    string
		doc     string
		wantErr error
		dropped string
	}{
		{name: "valid", doc: `{"keys":[` + key + `]}`},
		{name: "keys twice", doc: `{"keys":[],"keys":[` + key + `]}`, wantErr: errInvalidSet},
		{name: "Keys case variant", doc: `{"Keys":[` + key + `]}`, wantErr: errInvalidSet},
		{name: "invalid UTF-8", doc: "{\"keys\":[" + key + "],\"x\":\"\xff\"}", wantErr: errInvalidSet},
		{name: "repeated member in a key", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"a","kid":"b"}]}`, wantErr: errInvalidSet},
		{name: "KID case variant in a key", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"a","KID":"b"}]}`, wantErr: errNoUsableKeys, dropped: "not a JSON object with unique member names"},
		{name: "D case variant of private member", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":"a","D":"x"}]}`, wantErr: errNoUsableKeys, dropped: "not a JSON object with unique member names"},
		{name: "kid not a string", doc: `{"keys":[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","kid":1}]}`, wantErr: errNoUsableKeys, dropped: "malformed member: kid"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, dropped, err := parseSet([]byte(tt.doc))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("parseSet: %v, want %v", err, tt.wantErr)
			}
			if tt.dropped != "" && (len(dropped) != 1 || dropped[0].reason != tt.dropped) {
				t.Fatalf("dropped = %+v, want %q", dropped, tt.dropped)
			}
		})
	}
}
