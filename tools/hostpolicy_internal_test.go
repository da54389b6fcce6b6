package tools

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wrapped returns the IPv6 forms that carry the IPv4 address v4, by the
// name of the mechanism.
func wrapped(t *testing.T, v4 string) map[string]string {
	t.Helper()
	a := netip.MustParseAddr(v4).As4()
	var b [4]byte
	for i := range a {
		b[i] = ^a[i]
	}
	six := func(words ...uint16) string {
		var x [16]byte
		for i, w := range words {
			x[2*i], x[2*i+1] = byte(w>>8), byte(w)
		}
		return netip.AddrFrom16(x).String()
	}
	w := func(hi, lo byte) uint16 { return uint16(hi)<<8 | uint16(lo) }
	return map[string]string{
		"IPv4-mapped":     "::ffff:" + v4,
		"IPv4-compatible": "::" + v4,
		"NAT64":           "64:ff9b::" + v4,
		"6to4":            six(0x2002, w(a[0], a[1]), w(a[2], a[3]), 0, 0, 0, 0, 1),
		// Teredo with a public server (192.0.2.45 is documentation space,
		// public as far as isPrivate is concerned) and v4 as the client.
		"Teredo client": six(0x2001, 0, 0xc000, 0x022d, 0, 0, w(b[0], b[1]), w(b[2], b[3])),
		// Teredo with v4 as the server and a public client (8.8.8.8).
		"Teredo server": six(0x2001, 0, w(a[0], a[1]), w(a[2], a[3]), 0, 0, ^uint16(0x0808), ^uint16(0x0808)),
	}
}

// TestIsPrivateUnwrapsIPv4InIPv6 covers finding 11 of issue 11: every IPv6
// form that carries an IPv4 address is judged by that address.
func TestIsPrivateUnwrapsIPv4InIPv6(t *testing.T) {
	tests := []struct {
		v4      string
		private bool
	}{
		{v4: "127.0.0.1", private: true},
		{v4: "10.1.2.3", private: true},
		{v4: "169.254.169.254", private: true},
		{v4: "192.168.1.20", private: true},
		{v4: "100.100.100.200", private: true}, // shared address space (Alibaba's metadata)
		{v4: "0.0.0.0", private: true},
		{v4: "93.184.215.14", private: false},
	}
	p := newHostPolicy(nil, nil, false)
	for _, tt := range tests {
		require.Equal(t, tt.private, isPrivate(netip.MustParseAddr(tt.v4)), "the IPv4 address %s itself", tt.v4)
		for form, addr := range wrapped(t, tt.v4) {
			t.Run(tt.v4+" as "+form, func(t *testing.T) {
				a := netip.MustParseAddr(addr)
				require.True(t, a.Is6(), "%s is an IPv6 address", addr)
				assert.Equal(t, tt.private, isPrivate(a), "isPrivate(%s)", addr)

				// The literal in a URL and the address after resolution.
				err := p.check("[" + addr + "]")
				dial := p.dialControl(t.Context(), "tcp", netip.AddrPortFrom(a, 80).String(), nil)
				if !tt.private {
					assert.NoError(t, err)
					assert.NoError(t, dial)
					return
				}
				assert.EqualError(t, err, "tools: host ["+addr+"] denied: it is a private or loopback address")
				assert.True(t, errors.Is(dial, ErrDeniedHost), "dial to %s: %v", addr, dial)
			})
		}
	}
}

func TestIsPrivateIPv6Ranges(t *testing.T) {
	tests := []struct {
		addr    string
		private bool
	}{
		{addr: "fec0::1", private: true},                         // site-local
		{addr: "feff:ffff::1", private: true},                    // site-local, the top of fec0::/10
		{addr: "64:ff9b:1::a00:1", private: true},                // local-use NAT64 (RFC 8215), whatever it carries
		{addr: "64:ff9b:1:ab::5db8:d70e", private: true},         // ...with any layout
		{addr: "fd00::1", private: true},                         // unique local
		{addr: "fe80::1", private: true},                         // link-local
		{addr: "::1", private: true},                             // loopback
		{addr: "::", private: true},                              // unspecified
		{addr: "2606:4700:4700::1111", private: false},           // a public address
		{addr: "2001:db8::7f00:1", private: false},               // not Teredo (2001:db8::/32 is outside 2001::/32)
		{addr: "64:ff9b::5db8:d70e", private: false},             // NAT64 of a public address
		{addr: "2002:5db8:d70e::1", private: false},              // 6to4 of a public address
		{addr: "::ffff:5db8:d70e", private: false},               // mapped public address
		{addr: "2001:0:4136:e378:0:0:a247:28f1", private: false}, // Teredo of public server and client
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			assert.Equal(t, tt.private, isPrivate(netip.MustParseAddr(tt.addr)))
		})
	}
}
