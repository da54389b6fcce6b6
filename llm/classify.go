package llm

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"

	"github.com/tmc/langchaingo/llms"
)

// classified is an error together with its class; both are in its chain.
type classified struct {
	class error
	err   error
}

// Error returns "class: error".
func (e *classified) Error() string { return e.class.Error() + ": " + e.err.Error() }

// Unwrap returns the class and the error.
func (e *classified) Unwrap() []error { return []error{e.class, e.err} }

// classes are the four error classes, in the order Classify reports them.
var classes = []error{ErrContextOverflow, ErrRateLimited, ErrTransient, ErrPermanent}

// Classify returns err wrapped with its class — ErrContextOverflow,
// ErrRateLimited, ErrTransient or ErrPermanent — so that errors.Is matches
// both the class and every error in err's chain. It returns nil for nil and
// err itself when err is already classified.
//
// The class comes from typed errors first, in this order:
//   - ErrEmptyResponse and ErrMalformedResponse (reported by the models
//     New builds) are transient, and so are langchaingo's errors for a
//     reply without choices (openai, anthropic and ollama ErrEmptyResponse,
//     and the unexported "empty response" of its openaiclient, known by
//     its text): the provider answered,
//     badly, and a new attempt usually gets a proper reply;
//   - *APIError (captured by the models New builds): its HTTP status and
//     provider error code, see below;
//   - *llms.Error from langchaingo: ErrCodeTokenLimit is context overflow,
//     ErrCodeRateLimit rate limited, ErrCodeTimeout and
//     ErrCodeProviderUnavailable transient, the other known codes permanent;
//   - errors with an HTTPCode() int method (the Google API client's
//     *apierror.APIError over REST, which the Gemini client returns):
//     that HTTP status;
//   - context.DeadlineExceeded is transient, context.Canceled permanent
//     (the caller asked to stop, retrying would not honour that);
//   - net.Error timeouts, connection resets, refusals, broken pipes,
//     unexpected EOF and other *net.OpError failures are transient, except
//     a DNS "no such host", which is permanent.
//
// HTTP statuses: 429 is rate limited (but permanent with OpenAI's code
// insufficient_quota: the account is out of credit); 408, 409, 425 and 5xx
// are transient; 413 is context overflow; another 4xx is context overflow
// when the provider says so (see below) and permanent otherwise.
//
// Text is consulted only when no typed error decides, and only for the
// fixed strings documented in overflow.go and text.go: the status line that
// langchaingo's OpenAI and Anthropic clients put in their otherwise untyped
// errors, the messages of its openaiclient.sanitizeHTTPError, gRPC's status
// line (ResourceExhausted is rate limited; Unavailable, DeadlineExceeded,
// Aborted and Internal transient), the error event of an Anthropic stream
// as langchaingo's client prints it, and the providers' documented
// context-length codes and messages. Anything else is permanent, so an
// unknown failure is never retried blindly.
func Classify(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range classes {
		if errors.Is(err, c) {
			return err
		}
	}
	return &classified{class: classOf(err), err: err}
}

// IsRetryable reports whether err, once classified, is rate limited or
// transient.
func IsRetryable(err error) bool {
	c := Classify(err)
	return errors.Is(c, ErrRateLimited) || errors.Is(c, ErrTransient)
}

// classOf finds the class of an unclassified, non-nil error.
func classOf(err error) error {
	if c := classOfTyped(err); c != nil {
		return c
	}
	if c := classOfText(err.Error()); c != nil {
		return c
	}
	return ErrPermanent
}

// classOfTyped decides from typed errors in err's chain, or returns nil.
func classOfTyped(err error) error {
	if errors.Is(err, ErrEmptyResponse) || errors.Is(err, ErrMalformedResponse) || isClientEmpty(err) {
		return ErrTransient
	}
	var apiErr *APIError
	if errors.As(err, &apiErr) {
		if c := classOfStatus(apiErr.StatusCode, apiErr.Code, apiErr.Message); c != nil {
			return c
		}
	}
	var lcErr *llms.Error
	if errors.As(err, &lcErr) {
		if c := classOfLangchain(lcErr.Code); c != nil {
			return c
		}
	}
	var httpErr interface{ HTTPCode() int }
	if errors.As(err, &httpErr) {
		if c := classOfStatus(httpErr.HTTPCode(), "", err.Error()); c != nil {
			return c
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return ErrTransient
	}
	if errors.Is(err, context.Canceled) {
		return ErrPermanent
	}
	return classOfNetwork(err)
}

// classOfStatus maps an HTTP status, provider code and message to a class,
// or returns nil for statuses that are not errors.
func classOfStatus(statusCode int, code, msg string) error {
	switch {
	case statusCode == http.StatusTooManyRequests:
		if code == "insufficient_quota" {
			return ErrPermanent
		}
		return ErrRateLimited
	case statusCode == http.StatusRequestTimeout,
		statusCode == http.StatusConflict,
		statusCode == http.StatusTooEarly,
		statusCode >= 500 && statusCode <= 599:
		return ErrTransient
	case statusCode == http.StatusRequestEntityTooLarge:
		return ErrContextOverflow
	case statusCode >= 400 && statusCode <= 499:
		if isContextOverflow(code, msg) {
			return ErrContextOverflow
		}
		return ErrPermanent
	}
	return nil
}

// classOfLangchain maps langchaingo's standardized error codes.
func classOfLangchain(code llms.ErrorCode) error {
	switch code {
	case llms.ErrCodeTokenLimit:
		return ErrContextOverflow
	case llms.ErrCodeRateLimit:
		return ErrRateLimited
	case llms.ErrCodeTimeout, llms.ErrCodeProviderUnavailable:
		return ErrTransient
	case llms.ErrCodeAuthentication, llms.ErrCodeInvalidRequest, llms.ErrCodeResourceNotFound,
		llms.ErrCodeCanceled, llms.ErrCodeQuotaExceeded, llms.ErrCodeContentFilter,
		llms.ErrCodeNotImplemented:
		return ErrPermanent
	}
	return nil
}

// classOfGRPC maps gRPC status code names (Google AI's default
// transport), or returns nil for OK and Unknown.
func classOfGRPC(code, msg string) error {
	switch code {
	case "OK", "Unknown":
		return nil
	case "ResourceExhausted":
		return ErrRateLimited
	case "Unavailable", "DeadlineExceeded", "Aborted", "Internal":
		return ErrTransient
	case "InvalidArgument", "OutOfRange":
		if isContextOverflow("", msg) {
			return ErrContextOverflow
		}
	}
	return ErrPermanent
}

// classOfNetwork decides for errors of the network stack, or returns nil.
func classOfNetwork(err error) error {
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		if dnsErr.IsNotFound {
			return ErrPermanent
		}
		return ErrTransient
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return ErrTransient
	}
	for _, target := range []error{
		syscall.ECONNRESET, syscall.ECONNREFUSED, syscall.ECONNABORTED, syscall.EPIPE,
		io.ErrUnexpectedEOF, io.EOF,
	} {
		if errors.Is(err, target) {
			return ErrTransient
		}
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return ErrTransient
	}
	return nil
}
