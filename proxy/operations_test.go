package proxy

import (
	"reflect"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"

	"github.com/mcpguard/mcpguard/middleware"
)

// TestOperationsPolicy: Operations, the YAML's operations, has exactly
// the fields of middleware.OperationPolicy, in order, and policy carries
// every one of them over (its resource rules and public operations are Go
// conversions, checked by the compiler).
func TestOperationsPolicy(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var n []string
		for i := range typ.NumField() {
			n = append(n, typ.Field(i).Name)
		}
		return n
	}
	if got, want := names(reflect.TypeFor[Operations]()), names(reflect.TypeFor[middleware.OperationPolicy]()); !reflect.DeepEqual(got, want) {
		t.Fatalf("Operations fields = %q, middleware.OperationPolicy's = %q", got, want)
	}
	o := Operations{
		Methods:      map[string][]string{"tools/list": {"m"}},
		Tools:        map[string][]string{"t": {"a", "b"}},
		Prompts:      map[string][]string{"p": nil},
		Resources:    []ResourceRule{{URI: "file:///a", Scopes: []string{"r"}}, {URI: "file:///b/", Prefix: true}},
		DenyUnlisted: true,
		Public:       PublicOperations{Methods: []string{"ping"}, Tools: []string{"pt"}, Prompts: []string{"pp"}, Resources: []string{"file:///pub"}},
	}
	want := middleware.OperationPolicy{
		Methods:      map[string][]string{"tools/list": {"m"}},
		Tools:        map[string][]string{"t": {"a", "b"}},
		Prompts:      map[string][]string{"p": nil},
		Resources:    []middleware.ResourceRule{{URI: "file:///a", Scopes: []string{"r"}}, {URI: "file:///b/", Prefix: true}},
		DenyUnlisted: true,
		Public:       middleware.PublicOperations{Methods: []string{"ping"}, Tools: []string{"pt"}, Prompts: []string{"pp"}, Resources: []string{"file:///pub"}},
	}
	// Every field of o is set, so that a field policy forgot shows.
	v := reflect.ValueOf(o)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("the test leaves Operations.%s zero", v.Type().Field(i).Name)
		}
	}
	if got := o.policy(); !reflect.DeepEqual(got, want) {
		t.Errorf("policy() = %+v, want %+v", got, want)
	}
}

// TestValidationConfig: validateConfig carries every field of
// Validation, the YAML's validation, over to the validate.Config field of
// the same name (Algorithms as JWS algorithms, Audiences after the
// route's resource).
func TestValidationConfig(t *testing.T) {
	v := Validation{
		Audiences: []string{"https://alt.example.com/mcp"}, Leeway: time.Second, TenantClaim: "tid",
		AllowJWTType: true, AllowSCP: true, AllowMissingJTI: true, AllowMissingClientID: true,
		AllowedClients: []string{"c"}, AllowMissingIssuedAt: true, AllowMissingSubject: true,
		RejectMultipleAudiences: true, Algorithms: []string{"ES256"}, MaxTokenLifetime: time.Hour,
		MaxTokenBytes: 4096, RequireKID: true, CacheSize: 7, MaxKeyWait: time.Minute,
	}
	r := &Route{Resource: "https://mcp.example.com/mcp", Validation: v}
	got := reflect.ValueOf(r.validateConfig(nil))
	in := reflect.ValueOf(v)
	for i := range in.NumField() {
		name := in.Type().Field(i).Name
		if in.Field(i).IsZero() {
			t.Fatalf("the test leaves Validation.%s zero", name)
		}
		out := got.FieldByName(name)
		if !out.IsValid() {
			t.Errorf("validate.Config has no field %s", name)
			continue
		}
		want := in.Field(i).Interface()
		switch name {
		case "Algorithms":
			want = []jose.SignatureAlgorithm{jose.ES256}
		case "Audiences":
			want = []string{r.Resource, "https://alt.example.com/mcp"}
		}
		if !reflect.DeepEqual(out.Interface(), want) {
			t.Errorf("validate.Config.%s = %v, want %v", name, out.Interface(), want)
		}
	}
}
