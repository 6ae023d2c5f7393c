package proxy

// The names the external tests of this package use, unexported by
// issue #26.
const (
	DefaultJWKSPath = defaultJWKSPath
	HeaderSubject   = headerSubject
	HeaderTenant    = headerTenant
	HeaderScopes    = headerScopes
	HeaderClientID  = headerClientID
	ModeAssertion   = modeAssertion
	ModeExchange    = modeExchange
	ModeHeaders     = modeHeaders
)

// Load is load.
var Load = load
