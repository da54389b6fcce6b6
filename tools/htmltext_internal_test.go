package tools

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestHTMLToText(t *testing.T) {
	base, err := url.Parse("https://example.com/docs/page.html")
	require.NoError(t, err)
	tests := []struct {
		name string
		html string
		want string
	}{
		{
			name: "scripts, styles and navigation are dropped",
			html: `<html><head><title>T</title><style>p{color:red}</style><script>var x = 1;</script></head>
				<body><nav><a href="/">Home</a></nav><div role="navigation">Menu</div>
				<p>Kept.</p><script>alert("no")</script><noscript>Enable JS</noscript></body></html>`,
			want: "Kept.",
		},
		{
			name: "whitespace collapses across inline elements",
			html: "<p>Hello   <b>big</b>\n\t  world&nbsp;!</p>",
			want: "Hello big world !",
		},
		{
			name: "headings and paragraphs are separated by blank lines",
			html: "<h1>Title</h1><p>One.</p><p>Two.</p><h3>Sub <em>part</em></h3><div>Three.</div>",
			want: "# Title\n\nOne.\n\nTwo.\n\n### Sub part\n\nThree.",
		},
		{
			name: "lists",
			html: "<p>Steps:</p><ul><li>first</li><li>second <i>item</i></li></ul><ol><li>one</li></ol>",
			want: "Steps:\n\n- first\n- second item\n\n- one",
		},
		{
			name: "links show their absolute URL",
			html: `<p>See <a href="guide.html">the guide</a>, <a href="https://go.dev/">https://go.dev/</a>,
				<a href="#top">top</a>, <a href="javascript:void(0)">menu</a> and <a href="/x"><img src="i.png"></a>.</p>`,
			want: "See the guide (https://example.com/docs/guide.html), https://go.dev/, top, menu and .",
		},
		{
			name: "tables keep cells on one line",
			html: "<table><tr><th>Name</th><th>Age</th></tr><tr><td>Ada</td><td>36</td></tr></table>",
			want: "Name | Age\nAda | 36",
		},
		{
			name: "pre keeps its layout",
			html: "<p>Code:</p><pre>if x {\n    return\n}</pre><p>After.</p>",
			want: "Code:\n\nif x {\n    return\n}\n\nAfter.",
		},
		{
			name: "line breaks and hidden elements",
			html: `<p>a<br>b</p><div hidden>secret</div><span aria-hidden="true">icon</span><p>c</p>`,
			want: "a\nb\n\nc",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got, err := htmlToText(strings.NewReader(tt.html), base)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestHTMLTitle(t *testing.T) {
	title, _, err := htmlToText(strings.NewReader("<title>\n  A   page </title><p>x</p>"), nil)
	require.NoError(t, err)
	assert.Equal(t, "A page", title)
}

func TestHostPolicyMatching(t *testing.T) {
	tests := []struct {
		host     string
		patterns []string
		want     bool
	}{
		{"example.com", []string{"example.com"}, true},
		{"docs.example.com", []string{"example.com"}, true},
		{"Docs.Example.COM.", []string{"example.com"}, true},
		{"notexample.com", []string{"example.com"}, false},
		{"example.com", []string{"docs.example.com"}, false},
		{"10.0.0.1", []string{"0.1"}, false},
		{"127.0.0.1", []string{"127.0.0.1"}, true},
		{"::1", []string{"[::1]"}, true},
	}
	for _, tt := range tests {
		p := newHostPolicy(tt.patterns, nil, true)
		assert.Equal(t, tt.want, matchesAny(normalizeHost(tt.host), p.allow), "%s against %v", tt.host, tt.patterns)
	}
}
