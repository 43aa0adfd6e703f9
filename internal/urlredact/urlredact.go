// Package urlredact hides the secrets a URL may carry, for errors, logs and
// summaries: the password of its userinfo and the values of its query
// options. One mechanism serves every URL toolrl prints: Redis URLs
// (stream.Redact) and the http tool's URL (tools/httptool).
package urlredact

import "net/url"

// Mask replaces every secret.
const Mask = "xxxxx"

// String returns raw with the userinfo's password replaced by Mask (a lone
// userinfo, scheme://SECRET@host, is replaced whole: users write a password
// there, not a user name), and the value of every query option that public
// does not name (a nil public: every option). kind names the URL in the
// placeholder that replaces a URL, or a query, that does not parse
// ("<unparsable KIND>", "<KIND with an unparsable query>"): its text could
// hold a secret anywhere.
func String(raw, kind string, public map[string]bool) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "<unparsable " + kind + ">"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), Mask)
		} else {
			u.User = url.User(Mask)
		}
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return "<" + kind + " with an unparsable query>"
	}
	redacted := false
	for key := range q {
		if !public[key] {
			q.Set(key, Mask)
			redacted = true
		}
	}
	if redacted {
		u.RawQuery = q.Encode()
	}
	// A fragment is not sent, but it is written in the file like the rest.
	if u.Fragment != "" {
		u.Fragment = Mask
		u.RawFragment = ""
	}
	return u.String()
}
