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

// UserStreams returns the open streams counted per user on p's routes, in
// sum.
func UserStreams(p *Proxy) int {
	n := 0
	for _, r := range p.routes {
		r.fwd.users.mu.Lock()
		for _, c := range r.fwd.users.open {
			n += c
		}
		r.fwd.users.mu.Unlock()
	}
	return n
}
