// Package dns stands in for lego's providers/dns in the Traefik that scripts/setup-cluster builds:
// scripts/setup-cluster copies lego's module, puts this file in place of the generated one that
// imports every ACME DNS provider (about 850 packages with the cloud SDKs they need: a third of
// Traefik's build), and builds Traefik against that copy. KAOS's Gateway serves plain HTTP
// inside the test cluster and asks no ACME server for certificates; a DNS challenge configured
// anyway fails with this error when Traefik starts its ACME resolver.
package dns

import (
	"fmt"

	"github.com/go-acme/lego/v4/challenge"
)

// NewDNSChallengeProviderByName is the one function Traefik calls in lego's providers/dns.
func NewDNSChallengeProviderByName(name string) (challenge.Provider, error) {
	return nil, fmt.Errorf("ACME DNS provider %q: this Traefik is built without lego's DNS providers "+
		"(KAOS's test cluster, cluster/modules/traefik/legodns)", name)
}
