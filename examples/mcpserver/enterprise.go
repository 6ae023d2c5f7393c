package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/mcpguard/mcpguard/cimd"
	"github.com/mcpguard/mcpguard/devas"
	"github.com/mcpguard/mcpguard/devas/devidp"
)

// devXAAClientID is the MCP client of the enterprise development flow: a
// confidential client of the embedded authorization server allowed the
// JWT bearer grant, and a public client of the development IdP.
const devXAAClientID = "mcpguard-dev-xaa"

// devWorkloadSubject is the subject of the workload JWT the banner prints.
const devWorkloadSubject = "dev-workload"

var (
	errDevIdPWithIssuer = errors.New("-dev-idp-addr needs the embedded development authorization server (no -issuer)")
	errDevIdPLoopback   = errors.New("-dev-idp-addr must be a loopback address: the development IdP is for development only")
)

// enterprise is the development enterprise identity provider of
// -dev-idp-addr and what the embedded authorization server needs to trust
// it.
type enterprise struct {
	idp    *devidp.IdP
	ln     net.Listener
	secret string // devXAAClientID's secret at the authorization server
}

// startDevIdP listens on -dev-idp-addr and creates the development IdP,
// or returns nil without -dev-idp-addr.
func startDevIdP(o options) (*enterprise, error) {
	if o.devIdPAddr == "" {
		return nil, nil
	}
	switch {
	case o.issuer != "":
		return nil, errDevIdPWithIssuer
	case !isLoopbackAddr(o.devIdPAddr):
		return nil, errDevIdPLoopback
	}
	ln, err := net.Listen("tcp", o.devIdPAddr)
	if err != nil {
		return nil, fmt.Errorf("listen on -dev-idp-addr: %w", err)
	}
	idp, err := devidp.New(devidp.Config{Issuer: "http://" + ln.Addr().String(), Clients: []devidp.Client{{ID: devXAAClientID}}})
	if err != nil {
		ln.Close()
		return nil, err
	}
	secret := o.devXAASecret
	if secret == "" {
		b := make([]byte, 18)
		_, _ = rand.Read(b)
		secret = base64.RawURLEncoding.EncodeToString(b)
	}
	return &enterprise{idp: idp, ln: ln, secret: secret}, nil
}

// configure makes the embedded authorization server trust the IdP's
// ID-JAGs and workload JWTs (subjects -dev-workload-subjects) and
// registers devXAAClientID.
func (e *enterprise) configure(cfg *devas.Config, o options) {
	if e == nil {
		return
	}
	c := cimd.Client{Document: cimd.Document{
		ClientID:                devXAAClientID,
		ClientName:              "mcpguard development enterprise client",
		GrantTypes:              []string{"urn:ietf:params:oauth:grant-type:jwt-bearer"},
		TokenEndpointAuthMethod: "client_secret_basic",
	}}
	c.SetSecret(e.secret)
	cfg.Clients = append(cfg.Clients, c)
	trusted := devas.TrustedIssuer{Issuer: e.idp.Issuer(), Keys: e.idp.PublicKeys()}
	cfg.TrustedIdPs = []devas.TrustedIssuer{trusted}
	trusted.Subjects = o.devWorkloadSubjects
	if trusted.Subjects == nil { // the flag unset; set empty, it refuses every workload
		trusted.Subjects = []string{devWorkloadSubject + "*"}
	}
	cfg.TrustedWorkloads = []devas.TrustedIssuer{trusted}
}

// printEnterprise prints how to run the enterprise flows.
func (e *enterprise) printEnterprise(w io.Writer, ep endpoints) {
	if e == nil {
		return
	}
	id, err1 := e.idp.IDToken("dev-user", devXAAClientID)
	wl, err2 := e.idp.WorkloadJWT(devWorkloadSubject, ep.Issuer, time.Hour)
	if err := errors.Join(err1, err2); err != nil {
		fmt.Fprintf(w, "development IdP: %v\n", err)
		return
	}
	fmt.Fprintf(w, `
Enterprise flows (-dev-idp-addr; DEVELOPMENT ONLY, nobody logs in):
  development IdP (trusted by the authorization server): %s
  token exchange endpoint:                               %s/token
  client %s, secret at the authorization server:   %s
  an ID token of dev-user (valid 1h), for client.IDJAG's IdentityAssertion:
    %s
  a workload JWT of %s (valid 1h), for client.WorkloadIdentity:
    %s
docs/example.md shows both with mcpguard's client.

`, e.idp.Issuer(), e.idp.Issuer(), devXAAClientID, e.secret, id, devWorkloadSubject, wl)
}
