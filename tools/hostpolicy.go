package tools

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
)

// HostDeniedError reports a host that http_fetch refuses to contact.
type HostDeniedError struct {
	Host   string // the host name or address from the URL
	Reason string // "it is on the deny list", ...
}

// Error implements error.
func (e *HostDeniedError) Error() string {
	return fmt.Sprintf("tools: host %s denied: %s", e.Host, e.Reason)
}

// Unwrap returns ErrDeniedHost.
func (e *HostDeniedError) Unwrap() error { return ErrDeniedHost }

// hostPolicy decides which hosts may be fetched.
type hostPolicy struct {
	allow        []string
	deny         []string
	allowPrivate bool
}

func newHostPolicy(allow, deny []string, allowPrivate bool) hostPolicy {
	return hostPolicy{allow: normalizeHosts(allow), deny: normalizeHosts(deny), allowPrivate: allowPrivate}
}

func normalizeHosts(hs []string) []string {
	out := make([]string, 0, len(hs))
	for _, h := range hs {
		if h = normalizeHost(h); h != "" {
			out = append(out, h)
		}
	}
	return out
}

func normalizeHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(strings.TrimSpace(h)), ".")
}

// check applies the lists to a URL's host: deny wins over allow; an empty
// allow list allows every host. An address literal is also checked against
// the private ranges here, so that its error names it plainly.
func (p hostPolicy) check(host string) error {
	h := normalizeHost(host)
	if matchesAny(h, p.deny) {
		return &HostDeniedError{Host: host, Reason: "it is on the deny list"}
	}
	if len(p.allow) > 0 && !matchesAny(h, p.allow) {
		return &HostDeniedError{Host: host, Reason: "it is not on the allow list"}
	}
	if addr, err := netip.ParseAddr(strings.Trim(h, "[]")); err == nil && !p.allowPrivate && isPrivate(addr) {
		return &HostDeniedError{Host: host, Reason: "it is a private or loopback address"}
	}
	return nil
}

// matchesAny reports whether host equals a pattern or is a subdomain of
// it; address literals match only exactly.
func matchesAny(host string, patterns []string) bool {
	_, err := netip.ParseAddr(strings.Trim(host, "[]"))
	isAddr := err == nil
	for _, p := range patterns {
		if host == p || strings.Trim(host, "[]") == strings.Trim(p, "[]") {
			return true
		}
		if !isAddr && strings.HasSuffix(host, "."+p) {
			return true
		}
	}
	return false
}

// dialControl refuses connections to private addresses after name
// resolution, so that a public name that resolves to a private address
// (or is rebound to one) is refused too.
func (p hostPolicy) dialControl(_ context.Context, _, address string, _ syscall.RawConn) error {
	if p.allowPrivate {
		return nil
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &HostDeniedError{Host: address, Reason: "its address cannot be checked"}
	}
	if isPrivate(ap.Addr()) {
		return &privateAddrError{addr: ap.Addr()}
	}
	return nil
}

// privateAddrError is returned by the dialer; Call turns it into a
// HostDeniedError naming the host of the request.
type privateAddrError struct {
	addr netip.Addr
}

func (e *privateAddrError) Error() string {
	return fmt.Sprintf("tools: %s is a private or loopback address", e.addr)
}

func (e *privateAddrError) Unwrap() error { return ErrDeniedHost }

// Ranges isPrivate adds to those netip.Addr knows.
var (
	// thisNetwork is 0.0.0.0/8: "this host on this network"; a connection
	// to 0.0.0.0 reaches the local host.
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	// sharedAddressSpace is 100.64.0.0/10 (carrier-grade NAT), where some
	// clouds put their metadata service.
	sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")
	// siteLocal is fec0::/10, the deprecated IPv6 site-local range.
	siteLocal = netip.MustParsePrefix("fec0::/10")
	// nat64Local is 64:ff9b:1::/48, the local-use NAT64 prefix (RFC 8215):
	// a translator of the local network, reaching whatever it is set up to
	// reach, with an IPv4 address placed where its prefix length says.
	nat64Local = netip.MustParsePrefix("64:ff9b:1::/48")
)

// Prefixes of IPv6 addresses that carry an IPv4 address a packet ends up at.
var (
	// ipv4Compatible is ::/96, the deprecated IPv4-compatible addresses
	// (::a.b.c.d).
	ipv4Compatible = netip.MustParsePrefix("::/96")
	// nat64 is 64:ff9b::/96, the well-known NAT64 prefix (RFC 6052): the
	// address in the last 32 bits.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
	// sixToFour is 2002::/16 (RFC 3056): the address in bits 16 to 48.
	sixToFour = netip.MustParsePrefix("2002::/16")
	// teredo is 2001::/32 (RFC 4380): the server's address in bits 32 to
	// 64, the client's in the last 32 bits with every bit inverted.
	teredo = netip.MustParsePrefix("2001::/32")
)

// isPrivate reports addresses that are not on the public internet:
// loopback, private, link-local (including cloud metadata), unspecified,
// multicast, "this network", shared address space and IPv6 site-local;
// the local-use NAT64 prefix; and IPv6 addresses that carry such an IPv4
// address (IPv4-mapped, IPv4-compatible, NAT64, 6to4, Teredo), since a
// packet sent to them ends up there.
func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() {
		return true
	}
	if a.Is4() {
		return thisNetwork.Contains(a) || sharedAddressSpace.Contains(a)
	}
	if siteLocal.Contains(a) || nat64Local.Contains(a) {
		return true
	}
	for _, v4 := range embeddedIPv4(a) {
		if isPrivate(v4) {
			return true
		}
	}
	return false
}

// embeddedIPv4 returns the IPv4 addresses that an IPv6 address carries
// for a transition mechanism: none for an ordinary address.
func embeddedIPv4(a netip.Addr) []netip.Addr {
	b := a.As16()
	v4 := func(x [4]byte) netip.Addr { return netip.AddrFrom4(x) }
	switch {
	case ipv4Compatible.Contains(a), nat64.Contains(a):
		return []netip.Addr{v4([4]byte(b[12:16]))}
	case sixToFour.Contains(a):
		return []netip.Addr{v4([4]byte(b[2:6]))}
	case teredo.Contains(a):
		client := [4]byte{^b[12], ^b[13], ^b[14], ^b[15]}
		return []netip.Addr{v4([4]byte(b[4:8])), v4(client)}
	}
	return nil
}

// newDialer returns a dialer that applies the policy to resolved addresses.
func (p hostPolicy) newDialer() *net.Dialer {
	return &net.Dialer{ControlContext: p.dialControl}
}
