package proxy

import "github.com/mcpguard/mcpguard/internal/proxyinspect"

// The names the external tests of this package use, unexported by
// issue #26 (the command reaches the same through internal/proxyinspect).
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

func (px *Proxy) OpenAnswers() int        { return proxyinspect.Of(px).OpenAnswers() }
func (px *Proxy) AssertionIssuer() string { return px.assertionIssuer() }
func (px *Proxy) JWKSPath() string        { return px.jwksPath() }
