// Package netguard keeps toolhub's outbound connections away from places a
// vendor URL must not reach (SSRF): every address of the IANA
// special-purpose registries (IPv4 and IPv6: loopback, private,
// link-local, carrier NAT, documentation, benchmarking, reserved, …),
// multicast and cloud metadata addresses are refused unless an operator
// allows them, and an IPv6 address that embeds an IPv4 one (mapped,
// compatible, NAT64, 6to4) is judged by the IPv4 address it carries. Names are checked after DNS resolution, at dial
// time (so a rebinding name cannot slip past), and again on every redirect.
//
//	p, err := netguard.New(netguard.Options{Allow: []string{"127.0.0.1:9100"}})
//	err = p.CheckURL(ctx, "http://169.254.169.254/latest") // refused
//	client := p.Client(nil) // dials only allowed addresses, re-checks redirects
package netguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// ErrRefused is the cause of every refusal.
var ErrRefused = errors.New("netguard: address refused")

// ErrResolve is the cause of a name that could not be resolved (or has no
// address): not a refusal, the name may resolve later.
var ErrResolve = errors.New("netguard: name not resolved")

// Options of a [Policy]. The zero value refuses every special-purpose
// address and allows the public internet.
type Options struct {
	// Allow lists what may be reached although special: CIDRs
	// ("127.0.0.0/8"), addresses, "host:port" pairs ("127.0.0.1:9100") or
	// host names (allowed whatever they resolve to).
	Allow []string
	// Deny lists CIDRs, addresses or host names that are always refused,
	// even if public.
	Deny []string
	// Resolver; nil means net.DefaultResolver (the Sandbox's when set).
	Resolver *net.Resolver
	// Dialer dials the addresses the policy allows; nil means a
	// net.Dialer with a 10 s timeout and 30 s keep-alive.
	Dialer *net.Dialer
	// Sandbox, when set, keeps every dial and DNS query on loopback
	// (tests, drills): see [Sandbox].
	Sandbox *Sandbox
}

// Policy decides where toolhub may connect.
type Policy struct {
	allowNets, denyNets   []netip.Prefix
	allowHosts, denyHosts map[string]bool // lower-case names and "host:port"
	res                   *net.Resolver
	dialer                *net.Dialer
	sandbox               *Sandbox
	next                  atomic.Pointer[Policy] // set by Update: the lists in force
}

// New builds a policy, checking every entry.
func New(o Options) (*Policy, error) {
	p := &Policy{allowHosts: map[string]bool{}, denyHosts: map[string]bool{}, res: o.Resolver, dialer: o.Dialer, sandbox: o.Sandbox}
	if p.dialer == nil {
		p.dialer = &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	}
	if s := o.Sandbox; s != nil {
		p.dialer = s.dialer(p.dialer)
		if p.res == nil {
			p.res = s.Resolver()
		}
	}
	if p.res == nil {
		p.res = net.DefaultResolver
	}
	for _, list := range []struct {
		in    []string
		nets  *[]netip.Prefix
		hosts map[string]bool
	}{{o.Allow, &p.allowNets, p.allowHosts}, {o.Deny, &p.denyNets, p.denyHosts}} {
		for _, e := range list.in {
			e = strings.ToLower(strings.TrimSpace(e))
			switch {
			case e == "":
				return nil, errors.New("netguard: empty entry")
			case strings.Contains(e, "/"):
				pf, err := netip.ParsePrefix(e)
				if err != nil {
					return nil, fmt.Errorf("netguard: %q: %v", e, err)
				}
				*list.nets = append(*list.nets, pf.Masked())
			default:
				if a, err := netip.ParseAddr(e); err == nil {
					*list.nets = append(*list.nets, netip.PrefixFrom(a, a.BitLen()))
				} else {
					list.hosts[e] = true
				}
			}
		}
	}
	return p, nil
}

func contains(nets []netip.Prefix, a netip.Addr) bool {
	a = a.Unmap()
	for _, n := range nets {
		if n.Contains(a) {
			return true
		}
	}
	return false
}

// checkAddr decides one resolved address of host:port.
func (p *Policy) checkAddr(host, port string, a netip.Addr) error {
	where := net.JoinHostPort(a.String(), port)
	if host != a.String() {
		where += fmt.Sprintf(" (from %q)", host)
	}
	if contains(p.denyNets, a) {
		return fmt.Errorf("%w: %s is on the outbound deny list", ErrRefused, where)
	}
	if why := special(a); why != "" && !contains(p.allowNets, a) && !p.allowHosts[net.JoinHostPort(a.String(), port)] {
		return fmt.Errorf("%w: %s is %s; toolhub refuses private, loopback, link-local and metadata addresses unless an operator allows them (outbound.allow)", ErrRefused, where, why)
	}
	return nil
}

// resolve checks host:port and returns the addresses that may be dialled.
func (p *Policy) resolve(ctx context.Context, host, port string) ([]netip.Addr, error) {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	if p.denyHosts[h] || p.denyHosts[net.JoinHostPort(h, port)] {
		return nil, fmt.Errorf("%w: %s is on the outbound deny list", ErrRefused, host)
	}
	trusted := p.allowHosts[h] || p.allowHosts[net.JoinHostPort(h, port)]
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(h); err == nil {
		addrs = []netip.Addr{a}
	} else {
		ips, err := p.res.LookupNetIP(ctx, "ip", h)
		if err != nil {
			return nil, fmt.Errorf("%w: resolve %s: %v", ErrResolve, host, err)
		}
		addrs = ips
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("%w: %s has no address", ErrResolve, host)
	}
	if trusted {
		// An allowed name or host:port still never reaches a denied address.
		for _, a := range addrs {
			if contains(p.denyNets, a) {
				return nil, fmt.Errorf("%w: %s is on the outbound deny list", ErrRefused, net.JoinHostPort(a.String(), port))
			}
		}
		return addrs, nil
	}
	// Every address must pass: a name that resolves to one public and one
	// private address is refused, not dialled at random.
	for _, a := range addrs {
		if err := p.checkAddr(host, port, a); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// CheckURL checks a vendor URL: its scheme, and every address its host
// resolves to.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	if n := p.next.Load(); n != nil {
		return n.CheckURL(ctx, raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("netguard: url %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: url %q: scheme must be http or https", ErrRefused, raw)
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	_, err = p.resolve(ctx, u.Hostname(), port)
	return err
}

// DialContext dials only addresses the policy allows. It resolves the name
// itself and dials the checked address, so DNS cannot change the answer
// between the check and the connection.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	if n := p.next.Load(); n != nil {
		return n.DialContext(ctx, network, addr)
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs, err := p.resolve(ctx, host, port)
	if err != nil {
		return nil, err
	}
	var last error
	for _, a := range addrs {
		c, err := p.dialer.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		last = err
	}
	return nil, last
}

// Client returns an HTTP client that dials through the policy and checks
// every redirect target. base supplies the other transport settings (nil:
// http.DefaultTransport's).
func (p *Policy) Client(base *http.Transport) *http.Client {
	if base == nil {
		base = http.DefaultTransport.(*http.Transport).Clone()
		base.MaxIdleConnsPerHost = 64
	}
	t := base.Clone()
	t.Proxy = nil // a proxy would dial for us, past the policy
	t.DialContext = p.DialContext
	return &http.Client{
		Transport: t,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("netguard: more than 5 redirects")
			}
			return p.CheckURL(req.Context(), req.URL.String())
		},
	}
}
