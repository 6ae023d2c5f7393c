package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/mcpguard/mcpguard/middleware"
)

// dpopFlag is the flag.Value of -dpop: off, allowed or required (RFC 9449
// DPoP-bound access tokens; middleware.DPoPPolicy).
type dpopFlag struct{ policy *middleware.DPoPPolicy }

var dpopNames = [...]string{middleware.DPoPOff: "off", middleware.DPoPAllowed: "allowed", middleware.DPoPRequired: "required"}

func (f dpopFlag) String() string {
	if f.policy == nil || int(*f.policy) >= len(dpopNames) {
		return "off"
	}
	return dpopNames[*f.policy]
}

func (f dpopFlag) Set(s string) error {
	for p, name := range dpopNames {
		if s == name {
			*f.policy = middleware.DPoPPolicy(p)
			return nil
		}
	}
	return errors.New("must be off, allowed or required")
}

// printDPoP adds the DPoP policy to the welcome text.
func printDPoP(w io.Writer, o options) {
	switch o.dpop {
	case middleware.DPoPAllowed:
		fmt.Fprintln(w, "  DPoP (RFC 9449):              allowed: Bearer tokens and DPoP-bound tokens with proofs")
	case middleware.DPoPRequired:
		fmt.Fprintln(w, "  DPoP (RFC 9449):              required: only DPoP-bound tokens with a proof per request;")
		fmt.Fprintln(w, "                                the curl example below (Bearer) is refused; use mcpguard's client transport")
	}
}
