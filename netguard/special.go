package netguard

import (
	"fmt"
	"net/netip"
)

// specialNet is one entry of the IANA special-purpose address registries
// (IPv4: iana-ipv4-special-registry, IPv6: iana-ipv6-special-registry),
// with a few more ranges no vendor URL has reason to reach (multicast,
// deprecated site-local, cloud metadata services).
type specialNet struct {
	prefix netip.Prefix
	what   string // "a loopback address"
}

func sp(prefix, what string) specialNet {
	return specialNet{netip.MustParsePrefix(prefix), what}
}

// metadataAddrs are cloud metadata services: AWS, GCP and Azure
// (169.254.169.254), AWS over IPv6 (fd00:ec2::254), Oracle (192.0.0.192),
// Alibaba (100.100.100.200) and Azure's wire server (168.63.129.16, a
// public address).
var metadataAddrs = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
	netip.MustParseAddr("192.0.0.192"),
	netip.MustParseAddr("100.100.100.200"),
	netip.MustParseAddr("168.63.129.16"),
}

// specialV4 is the IPv4 special-purpose registry (RFC 6890 and updates)
// plus multicast. Every entry is refused, the few "globally reachable"
// anycast ones included: a vendor URL has no reason to name them.
var specialV4 = []specialNet{
	sp("0.0.0.0/8", "a \"this network\" address"),
	sp("0.0.0.0/32", "an unspecified address"),
	sp("10.0.0.0/8", "a private address"),
	sp("100.64.0.0/10", "a carrier-grade NAT address"),
	sp("127.0.0.0/8", "a loopback address"),
	sp("169.254.0.0/16", "a link-local address"),
	sp("172.16.0.0/12", "a private address"),
	sp("192.0.0.0/24", "an IETF protocol assignment address"),
	sp("192.0.2.0/24", "a documentation address"),
	sp("192.31.196.0/24", "an AS112 address"),
	sp("192.52.193.0/24", "an AMT address"),
	sp("192.88.99.0/24", "a 6to4 relay anycast address"),
	sp("192.168.0.0/16", "a private address"),
	sp("192.175.48.0/24", "an AS112 address"),
	sp("198.18.0.0/15", "a benchmarking address"),
	sp("198.51.100.0/24", "a documentation address"),
	sp("203.0.113.0/24", "a documentation address"),
	sp("224.0.0.0/4", "a multicast address"),
	sp("240.0.0.0/4", "a reserved address"),
	sp("255.255.255.255/32", "the broadcast address"),
}

// specialV6 is the IPv6 special-purpose registry (RFC 6890 and updates)
// plus multicast and site-local. The forms that embed an IPv4 address
// (mapped, compatible, translated, NAT64, 6to4) are decoded before this
// table is used; see [special].
var specialV6 = []specialNet{
	sp("::1/128", "a loopback address"),
	sp("::/128", "an unspecified address"),
	sp("::/8", "a reserved address"),
	sp("64:ff9b:1::/48", "a local-use NAT64 address"),
	sp("100::/64", "a discard-only address"),
	sp("100:0:0:1::/64", "a dummy address"),
	sp("2001::/23", "an IETF protocol assignment address"),
	sp("2001::/32", "a Teredo address"),
	sp("2001:db8::/32", "a documentation address"),
	sp("2620:4f:8000::/48", "an AS112 address"),
	sp("3fff::/20", "a documentation address"),
	sp("5f00::/16", "a segment routing address"),
	sp("fc00::/7", "a unique local (private) address"),
	sp("fe80::/10", "a link-local address"),
	sp("fec0::/10", "a site-local address"),
	sp("ff00::/8", "a multicast address"),
}

var (
	mapped     = netip.MustParsePrefix("::ffff:0:0/96")
	translated = netip.MustParsePrefix("::ffff:0:0:0/96")
	compatible = netip.MustParsePrefix("::/96")
	nat64      = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour  = netip.MustParsePrefix("2002::/16")
)

// embeddedV4 decodes the IPv4 address an IPv6 address carries: IPv4-mapped
// (::ffff:a.b.c.d), IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible
// (::a.b.c.d, deprecated), NAT64 well-known prefix (64:ff9b::a.b.c.d) and
// 6to4 (2002:aabb:ccdd::). form names the encoding.
func embeddedV4(a netip.Addr) (v4 netip.Addr, form string, ok bool) {
	if !a.Is6() {
		return netip.Addr{}, "", false
	}
	b := a.As16()
	last := netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]})
	switch {
	case mapped.Contains(a):
		return last, "IPv4-mapped", true
	case translated.Contains(a):
		return last, "IPv4-translated", true
	case nat64.Contains(a):
		return last, "NAT64", true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), "6to4", true
	case compatible.Contains(a) && a != netip.IPv6Unspecified() && a != netip.IPv6Loopback():
		return last, "IPv4-compatible", true
	}
	return netip.Addr{}, "", false
}

// special says why an address is not a public unicast one, or "".
func special(a netip.Addr) string {
	a = a.WithZone("")
	if v4, form, ok := embeddedV4(a); ok {
		if why := special(v4); why != "" {
			return fmt.Sprintf("an %s form of %s, %s", form, v4, why)
		}
		if form == "IPv4-compatible" || form == "IPv4-translated" {
			return "an " + form + " address (deprecated)"
		}
		return "" // mapped, NAT64, 6to4: they reach the public IPv4 address
	}
	for _, m := range metadataAddrs {
		if a == m {
			return "a cloud metadata address"
		}
	}
	table := specialV4
	if a.Is6() {
		table = specialV6
	}
	// The most specific entry names the address best (2001:db8::/32 is in
	// 2001::/23 too).
	best := -1
	for i, n := range table {
		if n.prefix.Contains(a) && (best < 0 || n.prefix.Bits() > table[best].prefix.Bits()) {
			best = i
		}
	}
	if best >= 0 {
		return table[best].what
	}
	return ""
}
