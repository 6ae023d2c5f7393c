package stdiobridge

// maxEventOverhead bounds what an SSE event of the bridge adds to its
// data (appendEvent, writeEvent): "event: message\n", "id: ", a stream
// ID of 32 hex digits, "-", a count of at most 19 digits, "\ndata: " and
// "\n\n".
const maxEventOverhead = len("event: message\n") + len("id: ") + 32 + 1 + 19 + len("\ndata: ") + len("\n\n")

// fitEvent returns resp, the response of call c, or, when an SSE event
// carrying it could exceed Config.MaxEventBytes (the reader in front
// would remove it and the client get a stream without its answer), an
// error response in its place. Logged.
func (s *session) fitEvent(c *call, resp []byte) []byte {
	bound := s.b.cfg.MaxEventBytes
	if bound <= 0 || len(resp)+maxEventOverhead <= bound {
		return resp
	}
	s.log.Warn("stdio: child answer too large for an SSE event, replaced by an error", "method", c.method, "bytes", len(resp), "max_event_bytes", bound)
	return errorResponse(c.clientID, -32603, "Response too large")
}
