package llm

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Default endpoints, shown in the resolution table of a tier that sets no
// base URL.
const (
	defaultAnthropicEndpoint = "https://api.anthropic.com/v1"
	defaultOllamaEndpoint    = "http://localhost:11434"
	defaultGoogleAIEndpoint  = "https://generativelanguage.googleapis.com"
)

// Resolved is how one tier resolved: the model that serves it and which
// setting chose it.
type Resolved struct {
	Tier     Tier
	Provider Provider
	Model    string
	// Endpoint is the base URL the calls go to (the provider's default
	// when the tier sets none).
	Endpoint string
	// Origin names what chose the model: "file", "COORFLOW_MODEL",
	// "COORFLOW_MODEL_REASONING", "--model reasoning", or "basic" for a tier that
	// follows the basic tier.
	Origin string
	// EndpointOrigin is the variable that gave the endpoint
	// (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, OLLAMA_HOST), "" otherwise.
	EndpointOrigin string
}

// OriginFile and OriginBasic are the origins of a tier the file set and
// of a tier that follows basic.
const (
	OriginFile  = "file"
	OriginBasic = "basic"
)

// Resolved returns how every known tier resolves, basic first: the tiers
// the configuration leaves unset are served by the basic tier's model.
// It is meaningful after ApplyEnv; without a basic tier it returns nil.
func (c Config) Resolved() []Resolved {
	basic, ok := c.Models[TierBasic]
	if !ok {
		return nil
	}
	out := make([]Resolved, 0, len(allTiers))
	for _, t := range allTiers {
		mc, own := c.Models[t]
		r := Resolved{Tier: t, Origin: OriginFile}
		if !own {
			mc, r.Origin = basic, OriginBasic
			r.EndpointOrigin = c.endpoints[TierBasic]
		} else {
			if o := c.origins[t]; o != "" {
				r.Origin = o
			}
			r.EndpointOrigin = c.endpoints[t]
		}
		r.Provider, r.Model, r.Endpoint = mc.Provider, mc.Model, Endpoint(mc)
		out = append(out, r)
	}
	return out
}

// Endpoint returns the base URL a tier's calls go to: its BaseURL, or the
// provider's default.
func Endpoint(mc ModelConfig) string {
	if mc.BaseURL != "" {
		return mc.BaseURL
	}
	ps, _ := specOf(mc.Provider)
	return ps.endpoint
}

// Surprising reports whether a resolution deserves to be shown before a
// run even when nobody asked: the environment or the command line chose
// some tier's model or endpoint, and the tiers do not all reach the same
// provider at the same endpoint — for example one tier moved to a local
// server while another still goes to api.openai.com.
func Surprising(rs []Resolved) bool {
	if len(rs) == 0 {
		return false
	}
	overridden, mixed := false, false
	for _, r := range rs {
		if (r.Origin != OriginFile && r.Origin != OriginBasic) || r.EndpointOrigin != "" {
			overridden = true
		}
		if r.Provider != rs[0].Provider || r.Endpoint != rs[0].Endpoint {
			mixed = true
		}
	}
	return overridden && mixed
}

// WriteResolved writes rs as a table: tier, provider, model, endpoint and
// what chose them.
func WriteResolved(w io.Writer, rs []Resolved) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tPROVIDER\tMODEL\tENDPOINT\tCHOSEN BY")
	for _, r := range rs {
		by := r.Origin
		if r.Origin == OriginBasic {
			by = "unset: follows basic"
		}
		if r.EndpointOrigin != "" {
			by += ", endpoint from " + r.EndpointOrigin
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.Tier, r.Provider, r.Model, r.Endpoint, by)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("llm: write resolved models: %w", err)
	}
	return nil
}

// FormatResolved returns the table WriteResolved writes.
func FormatResolved(rs []Resolved) string {
	var b strings.Builder
	_ = WriteResolved(&b, rs)
	return b.String()
}
