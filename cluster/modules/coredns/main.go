// CoreDNS with only the plugins cluster/coredns.yaml's Corefile uses. CoreDNS's own main links
// every plugin of its plugin.cfg (cloud DNS providers among them), which took 36 minutes to build
// here; coremain with these few builds in a fraction of that.
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
