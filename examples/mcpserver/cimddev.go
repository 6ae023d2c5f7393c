package main

import (
	"crypto/x509"
	"errors"
	"fmt"
	"os"

	"github.com/mcpguard/mcpguard/cimd"
)

// Errors of the CIMD development mode.
var (
	errCIMDDevNeedsDevAS = errors.New("-dev-insecure-cimd-loopback and -dev-cimd-root-ca configure the embedded authorization server: not with -issuer")
	errCIMDRootCANoMode  = errors.New("-dev-cimd-root-ca needs -dev-insecure-cimd-loopback")
)

// checkCIMDDev refuses the CIMD development flags where they mean
// nothing, before anything is bound.
func checkCIMDDev(o options) error {
	switch {
	case (o.devInsecureCIMDLoopback || o.devCIMDRootCA != "") && o.issuer != "":
		return errCIMDDevNeedsDevAS
	case o.devCIMDRootCA != "" && !o.devInsecureCIMDLoopback:
		return errCIMDRootCANoMode
	}
	return nil
}

// cimdResolverConfig returns the embedded authorization server's Client ID
// Metadata Document resolver configuration. By default it is the zero
// value, cimd's production policy: https on port 443 of public addresses
// only. With -dev-insecure-cimd-loopback, documents may also be fetched
// from loopback addresses on any port, still over https (a client_id URL
// is always https, draft-ietf-oauth-client-id-metadata-document-00 §3),
// verified against the system roots or the -dev-cimd-root-ca file.
// Everything else (size cap, media type, redirects, rate limits,
// validation) stays as it is.
func cimdResolverConfig(o options) (cimd.ResolverConfig, error) {
	if !o.devInsecureCIMDLoopback {
		return cimd.ResolverConfig{}, nil
	}
	rc := cimd.ResolverConfig{InsecureAllowLoopback: true}
	if o.devCIMDRootCA != "" {
		pem, err := os.ReadFile(o.devCIMDRootCA)
		if err != nil {
			return rc, fmt.Errorf("-dev-cimd-root-ca: %w", err)
		}
		rc.RootCAs = x509.NewCertPool()
		if !rc.RootCAs.AppendCertsFromPEM(pem) {
			return rc, fmt.Errorf("-dev-cimd-root-ca: no PEM certificate in %s", o.devCIMDRootCA)
		}
	}
	return rc, nil
}

// cimdDevWarning is printed in the welcome text when the mode is on.
const cimdDevWarning = `
WARNING: -dev-insecure-cimd-loopback is on: the authorization server
fetches Client ID Metadata Documents from https URLs on THIS MACHINE
(loopback, any port). Any local process can serve one. Development only.
`
