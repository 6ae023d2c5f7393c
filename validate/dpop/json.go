package dpop

import "github.com/go-json-experiment/json"

// readJSON decodes one JSON object of a proof (its JOSE header, its claims
// set or its "jwk") into v. It is the only place this package reads JSON,
// so that it can follow the module's shared strictness policy: with
// go-json-experiment/json's defaults, duplicate member names and invalid
// UTF-8 are refused, names match case-sensitively (a "HTM" member is not
// "htm"), and a member of the wrong type is an error. Unknown members are
// allowed (RFC 9449 §4.2 lets proofs carry more claims).
func readJSON(data []byte, v any) error {
	return json.Unmarshal(data, v)
}
