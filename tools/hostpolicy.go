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

// sharedAddressSpace is 100.64.0.0/10 (carrier-grade NAT), where some
// clouds put their metadata service.
var sharedAddressSpace = netip.MustParsePrefix("100.64.0.0/10")

// isPrivate reports addresses that are not on the public internet:
// loopback, private, link-local (including cloud metadata), unspecified,
// multicast and shared address space.
func isPrivate(a netip.Addr) bool {
	a = a.Unmap()
	return a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsInterfaceLocalMulticast() || a.IsMulticast() || a.IsUnspecified() || sharedAddressSpace.Contains(a)
}

// newDialer returns a dialer that applies the policy to resolved addresses.
func (p hostPolicy) newDialer() *net.Dialer {
	return &net.Dialer{ControlContext: p.dialControl}
}
