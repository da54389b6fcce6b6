package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"time"
)

// DefaultWebhookTimeout bounds a webhook call when Config.WebhookTimeout
// is zero.
const DefaultWebhookTimeout = 10 * time.Second

// maxWebhookURL caps the length of a webhook URL.
const maxWebhookURL = 2048

// checkWebhook refuses a webhook URL that Config.WebhookAllow does not
// allow: the URL is the caller's, the request is the server's, so only
// the operator's URLs may be called (webhookPolicy).
func (s *Server) checkWebhook(raw string) *apiError {
	u, err := url.Parse(raw)
	switch {
	case len(raw) > maxWebhookURL:
		return fieldErrorf(CodeInvalidField, "webhook", "field \"webhook\" is longer than %d bytes", maxWebhookURL)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Opaque != "":
		return fieldErrorf(CodeInvalidField, "webhook", "field \"webhook\" must be an http or https URL without credentials, not %q", raw)
	case len(s.webhooks) == 0:
		return fieldErrorf(CodeInvalidField, "webhook", "webhooks are off on this server: its operator allows URL prefixes with --webhook-allow (Config.WebhookAllow)")
	}
	if err := checkWebhookPath(u); err != nil {
		return fieldErrorf(CodeInvalidField, "webhook", "webhook %q is refused: %v", raw, err)
	}
	if !s.webhooks.allows(u) {
		return fieldErrorf(CodeInvalidField, "webhook", "webhook %q is not under a URL prefix this server allows (--webhook-allow)", raw)
	}
	return nil
}

// webhookClient follows no redirect: an allowed URL must not send the
// server on to one that is not.
var webhookClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// notifyWebhook posts the ended run p, with its values or error, to its
// Platform request's webhook, within Config.WebhookTimeout, when this
// server's policy allows the URL (it may differ from the policy of the
// replica that took the request, or have changed since). A failure is
// logged; the run's outcome stays as it was. deliverNotice calls it.
func (s *Server) notifyWebhook(ctx context.Context, p *placed) {
	target := p.platform.Webhook
	if e := s.checkWebhook(target); e != nil {
		s.log.WarnContext(ctx, "server: webhook refused", "run", p.id, "webhook", target, "err", e.Message)
		return
	}
	timeout := s.cfg.WebhookTimeout
	if timeout <= 0 {
		timeout = DefaultWebhookTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	v, verr := s.view(ctx, p, true)
	if verr != nil && v.ID == "" {
		s.log.WarnContext(ctx, "server: webhook failed", "run", p.id, "webhook", target, "err", verr)
		return
	}
	body := map[string]any{}
	b, _ := json.Marshal(lgRunOf(v, p.platform))
	_ = json.Unmarshal(b, &body)
	if verr == nil {
		if v.Error != nil {
			body["error"] = v.Error.Message
		} else {
			body["values"] = v.Values
		}
	}
	data, err := json.Marshal(body)
	if err == nil {
		err = postWebhook(ctx, target, data)
	}
	if err != nil {
		s.log.WarnContext(ctx, "server: webhook failed", "run", p.id, "webhook", target, "err", err)
	}
}

func postWebhook(ctx context.Context, target string, data []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(data))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := webhookClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 300 {
		return errors.New("server: webhook answered " + resp.Status)
	}
	return nil
}
